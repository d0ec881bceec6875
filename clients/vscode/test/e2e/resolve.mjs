// Drives code-server in headless Chromium: a task's two hunks both conflict with the user's
// edits of their lines; the lenses say so before any accept; "Merge view" opens the diff
// editor beside the agent's read-only version, "Ask the agent to redo it" runs a turn whose
// new hunk applies, "Take theirs" replaces the user's line. Run by
// tests/e2e/test_vscode_resolve.py; one JSON line per step on stdout, a screenshot each.
//
// Env: BATON_E2E_URL, BATON_E2E_ARTIFACTS, BATON_E2E_PROFILE, BATON_E2E_CHROMIUM (as
//      drive.mjs), BATON_E2E_INSTRUCTION, BATON_E2E_FILE.
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import { env, harness } from "./harness.mjs";

const url = env("BATON_E2E_URL");
const artifacts = env("BATON_E2E_ARTIFACTS");
const instruction = env("BATON_E2E_INSTRUCTION");
const file = env("BATON_E2E_FILE");
mkdirSync(artifacts, { recursive: true });

let page;
const { log, step } = harness(artifacts, () => page);

async function waitStatus(part, timeout = 30000) {
  await page.waitForFunction(
    (p) => (document.getElementById("baton.baton.baton.status")?.getAttribute("aria-label") ?? "").includes(p),
    part,
    { timeout },
  );
  return (await page.locator('[id="baton.baton.baton.status"]').getAttribute("aria-label")) ?? "";
}

/** The text of the editor of the active group (Monaco renders spaces as non-breaking ones). */
async function activeText() {
  const text = await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().innerText();
  return text.replace(/\u00a0/g, " ");
}

async function waitActive(pred, what, timeout = 20000, seen = undefined) {
  const deadline = Date.now() + timeout;
  let text = "";
  while (Date.now() < deadline) {
    text = await activeText();
    if (seen && seen.at(-1) !== text) seen.push(text);
    if (pred(text)) return text;
    await page.waitForTimeout(100);
  }
  throw new Error(`the editor never showed ${what}; it shows:\n${text}`);
}

async function tabs() {
  return page.evaluate(() =>
    [...document.querySelectorAll(".tabs-container .tab")].map((t) => ({
      label: t.getAttribute("aria-label") ?? "",
      dirty: t.classList.contains("dirty"),
      active: t.classList.contains("active"),
    })),
  );
}

async function palette(command) {
  await page.keyboard.press("Control+Shift+P");
  const input = page.locator(".quick-input-widget input.input");
  await input.waitFor({ state: "visible" });
  await input.fill(`>${command}`);
  const focusedIs = () =>
    page.evaluate((c) => {
      const row = document.querySelector(".quick-input-widget .monaco-list-row.focused");
      const label = row?.querySelector(".label-name")?.textContent?.replace(/\u00a0/g, " ") ?? "";
      return label === c;
    }, command);
  await page.waitForFunction(
    (c) =>
      [...document.querySelectorAll(".quick-input-widget .monaco-list-row .label-name")].some(
        (e) => (e.textContent ?? "").replace(/\u00a0/g, " ") === c,
      ),
    command,
    { timeout: 10000 },
  );
  await page.locator(".quick-input-widget .monaco-list-row.focused").waitFor();
  for (let i = 0; i < 10 && !(await focusedIs()); i++) {
    await page.keyboard.press("ArrowDown");
    await page.waitForTimeout(50);
  }
  if (!(await focusedIs())) throw new Error(`no command "${command}" in the palette`);
  await page.keyboard.press("Enter");
}

const context = await chromium.launchPersistentContext(env("BATON_E2E_PROFILE"), {
  executablePath: process.env.BATON_E2E_CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1400, height: 860 },
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});

try {
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(20000);

  await step("workbench-idle", async () => {
    await page.goto(url);
    await page.locator(".monaco-workbench").waitFor({ timeout: 30000 });
    return { status: await waitStatus("idle", 30000) };
  });

  await step("file-open", async () => {
    await page.keyboard.press("Control+P");
    const input = page.locator(".quick-input-widget input.input");
    await input.waitFor({ state: "visible" });
    await input.fill(file);
    await page.waitForSelector(`.quick-input-widget .monaco-list-row[aria-label*="${file}"]`);
    await page.keyboard.press("Enter");
    await page.locator(`.tab.active[aria-label*="${file}"]`).waitFor();
    await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
  });

  await step("task-running", async () => {
    await palette("Baton: Delegate Selection…");
    const input = page.locator(".quick-input-widget input.input");
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "Baton: Delegate" }).waitFor();
    await input.fill(instruction);
    await page.locator(".quick-input-widget .monaco-list-row.focused", { hasText: instruction }).waitFor();
    await page.keyboard.press("Enter");
    return { status: await waitStatus("ready for review", 60000) };
  });

  const lenses = () => page.locator(".editor-group-container.active .codelens-decoration a").allInnerTexts();
  const lens = (re) => page.locator(".editor-group-container.active .codelens-decoration a", { hasText: re }).first();
  async function waitLenses(pred, what, timeout = 30000) {
    const deadline = Date.now() + timeout;
    let l = [];
    while (Date.now() < deadline) {
      l = await lenses();
      if (pred(l)) return l;
      await page.waitForTimeout(100);
    }
    throw new Error(`lenses never showed ${what}: ${JSON.stringify(l)}`);
  }
  const conflicting = (l) => l.filter((x) => x.endsWith("Conflicts with your edits: Keep mine")).length;

  await step("edited", async () => {
    await lens(/^Accept$/).waitFor();
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+Home");
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("End");
    await page.keyboard.type("  # mine");
    for (let i = 0; i < 4; i++) await page.keyboard.press("ArrowDown");
    await page.keyboard.press("End");
    await page.keyboard.type("  # mine");
    return { lenses: await waitLenses((l) => conflicting(l) === 2, "both hunks in conflict"), text: await activeText() };
  });

  await step("merge-view", async () => {
    await lens(/^Merge view$/).click();
    const diff = page.locator(".editor-group-container.active .monaco-diff-editor");
    await diff.waitFor();
    const right = diff.locator(".editor.modified .view-lines").first();
    const left = diff.locator(".editor.original .view-lines").first();
    const deadline = Date.now() + 20000;
    while (!(await right.innerText()).replace(/\u00a0/g, " ").includes("return 20") && Date.now() < deadline) await page.waitForTimeout(100);
    const out = {
      tabs: await tabs(),
      mine: (await left.innerText()).replace(/\u00a0/g, " "),
      theirs: (await right.innerText()).replace(/\u00a0/g, " "),
    };
    // the agent's side is read-only: typing there changes nothing
    await right.click();
    await page.keyboard.type("xyz");
    await page.waitForTimeout(300);
    out.theirsAfterTyping = (await right.innerText()).replace(/\u00a0/g, " ");
    await palette("View: Close Editor");
    await page.locator(`.editor-group-container.active .tab.active[aria-label*="${file}"]`).waitFor();
    return out;
  });

  await step("redo", async () => {
    await lens(/^Ask the agent to redo it$/).click();
    await waitStatus("ready for review", 60000);
    const l = await waitLenses((x) => conflicting(x) === 1 && x.some((y) => /^Accept( \(edited since\))?$/.test(y)), "the redone hunk applying, the other in conflict");
    return { lenses: l, text: await activeText() };
  });

  await step("take-theirs", async () => {
    await lens(/^Take theirs$/).click();
    const text = await waitActive((t) => t.includes("    return 20\n") || t.endsWith("    return 20"), "the agent's line 6");
    return { text, lenses: await waitLenses((l) => conflicting(l) === 0, "no conflict left") };
  });

  await step("accept-redone", async () => {
    // a lens drawn again while it is clicked takes no click: try again while it is there
    let text = "";
    for (let i = 0; i < 3; i++) {
      await lens(/^Accept( \(edited since\))?$/).click();
      try {
        text = await waitActive((t) => t.includes("return 10  # mine"), "the redone hunk", 8000);
        break;
      } catch (err) {
        if (i === 2) {
          const toasts = await page.locator(".notifications-toasts .notification-list-item").allInnerTexts();
          throw new Error(`${err instanceof Error ? err.message : err}\ntoasts: ${JSON.stringify(toasts)}`);
        }
      }
    }
    return { text, status: await waitStatus("idle", 30000) };
  });
  log("done");
} finally {
  await context.close();
}
