// Drives code-server in headless Chromium: delegate a task, accept its first hunk, open a
// comment thread (VS Code's Comments API) on the second and send the comment to the agent;
// the revised result comes back with the accepted hunk kept and the new hunk marked
// "Accept (revised)"; "Step Back to an Earlier Turn…" shows the first turn's result, then the
// second's again, which is accepted. Run by tests/e2e/test_vscode_revision.py; one JSON
// line per step on stdout, a screenshot each.
//
// Env: BATON_E2E_URL, BATON_E2E_ARTIFACTS, BATON_E2E_PROFILE, BATON_E2E_CHROMIUM (as
//      drive.mjs), BATON_E2E_INSTRUCTION, BATON_E2E_FILE, BATON_E2E_COMMENT.
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import { env, harness } from "./harness.mjs";

const url = env("BATON_E2E_URL");
const artifacts = env("BATON_E2E_ARTIFACTS");
const instruction = env("BATON_E2E_INSTRUCTION");
const file = env("BATON_E2E_FILE");
const comment = env("BATON_E2E_COMMENT");
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

async function ghosts() {
  return page.evaluate(() => {
    const out = [];
    const root = document.querySelector(".editor-instance .monaco-editor .view-lines");
    for (const el of root?.querySelectorAll("span") ?? []) {
      const c = getComputedStyle(el, "::after").content;
      if (c && c !== "none" && c !== "normal" && c !== '""') out.push(JSON.parse(c.replace(/^'|'$/g, '"')));
    }
    return out;
  });
}

/** The CodeLens links (text) currently shown in the editor. */
async function lensTexts() {
  return page.locator(".editor-instance .codelens-decoration a").allInnerTexts();
}

async function waitLenses(pred, what, timeout = 10000) {
  const deadline = Date.now() + timeout;
  let l = [];
  while (Date.now() < deadline) {
    l = await lensTexts();
    if (pred(l)) return l;
    await page.waitForTimeout(100);
  }
  throw new Error(`lenses never showed ${what}: ${JSON.stringify(l)}`);
}

const count = (list, x) => list.filter((v) => v === x).length;

async function clickLens(label) {
  const links = page.locator(".editor-instance .codelens-decoration a", { hasText: new RegExp(`^${label}$`) });
  await links.first().click();
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

  await step("ready-for-review", async () => {
    await palette("Baton: Delegate Selection…");
    const input = page.locator(".quick-input-widget input.input");
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "Baton: Delegate" }).waitFor();
    await input.fill(instruction);
    await page.locator(".quick-input-widget .monaco-list-row.focused", { hasText: instruction }).waitFor();
    await page.keyboard.press("Enter");
    const status = await waitStatus("ready for review", 30000);
    const lenses = await waitLenses((l) => count(l, "Accept") === 2, "two hunks to review", 20000);
    return { status, lenses, ghosts: await ghosts() };
  });

  await step("first-accepted", async () => {
    await clickLens("Accept");
    const text = await waitActive((t) => /^\s*return 10\s*$/m.test(t), "the accepted hunk");
    const lenses = await waitLenses((l) => count(l, "Accept") === 1, "one hunk left");
    return { text, lenses, ghosts: await ghosts() };
  });

  await step("thread-opened", async () => {
    await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+Home");
    for (let i = 0; i < 5; i++) await page.keyboard.press("ArrowDown"); // line 6: the hunk
    await page.locator(".statusbar-item", { hasText: "Ln 6," }).first().waitFor();
    await palette("Comments: Add Comment on Current Selection");
    const form = page.locator(".review-widget .comment-form");
    await form.first().waitFor({ state: "visible", timeout: 15000 });
    const widget = page.locator(".review-widget").first();
    await widget.getByRole("button", { name: "Send to the Agent" }).first().waitFor();
    const buttons = await widget.getByRole("button").allInnerTexts();
    return { buttons };
  });

  await step("comment-sent", async () => {
    await page.keyboard.type(comment);
    // the form's buttons are enabled once VS Code has seen the text
    const send = page.locator(".review-widget").first().getByRole("button", { name: "Send to the Agent" });
    await page.waitForFunction(() => {
      const b = [...document.querySelectorAll(".review-widget [role=button], .review-widget button")].find((e) => (e.textContent ?? "").includes("Send to the Agent"));
      return !!b && !b.classList.contains("disabled") && b.getAttribute("aria-disabled") !== "true";
    });
    await send.first().click();
    const sent = page.locator(".review-widget .review-comment", { hasText: comment });
    await sent.first().waitFor({ timeout: 15000 });
    return { thread: await page.locator(".review-widget").first().innerText() };
  });

  await step("revised", async () => {
    const lenses = await waitLenses((l) => l.includes("Accept (revised)"), "the revised hunk", 45000);
    const text = await activeText();
    return { lenses, text, ghosts: await ghosts(), status: await waitStatus("ready for review"), threads: await page.locator(".review-widget").count() };
  });

  async function stepTo(turn) {
    await palette("Baton: Step Back to an Earlier Turn…");
    await page.locator(".quick-input-widget .monaco-list-row.focused", { hasText: `Turn ${turn}` }).waitFor();
    await page.keyboard.press("Enter");
  }

  await step("stepped-back", async () => {
    await stepTo(1);
    const deadline = Date.now() + 20000;
    let g = await ghosts();
    while (Date.now() < deadline && !(g.length === 1 && g[0] === "→ return 20")) {
      await page.waitForTimeout(100);
      g = await ghosts();
    }
    return { ghosts: g, lenses: await lensTexts(), text: await activeText() };
  });

  await step("stepped-forward", async () => {
    await stepTo(2);
    const deadline = Date.now() + 20000;
    let g = await ghosts();
    while (Date.now() < deadline && !(g.length === 1 && g[0] === "→ return 2 * 10")) {
      await page.waitForTimeout(100);
      g = await ghosts();
    }
    return { ghosts: g, lenses: await waitLenses((l) => l.includes("Accept (revised)"), "the revised hunk again", 15000) };
  });

  await step("thread-on-accepted", async () => {
    // the accepted hunk's line (2) takes a thread too: a comment on it is a revision turn
    await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+Home");
    await page.keyboard.press("ArrowDown");
    await page.locator(".statusbar-item", { hasText: "Ln 2," }).first().waitFor();
    await palette("Comments: Add Comment on Current Selection");
    const widget = page.locator(".review-widget").first();
    await widget.locator(".comment-form").first().waitFor({ state: "visible", timeout: 15000 });
    await widget.getByRole("button", { name: "Send to the Agent" }).first().waitFor();
    const buttons = await widget.getByRole("button").allInnerTexts();
    await page.keyboard.press("Escape"); // leave it unsent
    return { buttons };
  });

  await step("revised-accepted", async () => {
    await clickLens("Accept \\(revised\\)");
    const text = await waitActive((t) => /^\s*return 2 \* 10\s*$/m.test(t), "the revised hunk accepted");
    return { text, status: await waitStatus("idle", 20000), lenses: await lensTexts() };
  });
  log("done");
} finally {
  await context.close();
}
