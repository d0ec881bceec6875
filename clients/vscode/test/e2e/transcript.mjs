// Drives code-server in headless Chromium: delegate a task, open "Baton: Inspect Task" while
// the fake agent streams, and watch its transcript grow sentence by sentence in a read-only
// document (never an untitled, dirty one) until the task is ready for review. Run by
// tests/e2e/test_vscode_transcript.py; one JSON line per step on stdout, a screenshot each.
//
// Env: BATON_E2E_URL, BATON_E2E_ARTIFACTS, BATON_E2E_PROFILE, BATON_E2E_CHROMIUM (as
//      drive.mjs), BATON_E2E_INSTRUCTION, BATON_E2E_FILE, BATON_E2E_FIRST and
//      BATON_E2E_SECOND (the agent's two sentences, said with a pause between them).
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import { env, harness } from "./harness.mjs";

const url = env("BATON_E2E_URL");
const artifacts = env("BATON_E2E_ARTIFACTS");
const instruction = env("BATON_E2E_INSTRUCTION");
const file = env("BATON_E2E_FILE");
const first = env("BATON_E2E_FIRST");
const second = env("BATON_E2E_SECOND");
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

/** The agent's lines in a transcript text: those that start one of its two sentences. */
const agentLines = (text) => text.split("\n").filter((l) => l.startsWith(first.slice(0, 10)));

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
    return { status: await waitStatus("1 running", 20000) };
  });

  await step("transcript-opened", async () => {
    await palette("Baton: Inspect Task");
    // one task: the quick pick lists it; take it
    await page.locator(".quick-input-widget .monaco-list-row.focused", { hasText: instruction.slice(0, 20) }).waitFor();
    await page.keyboard.press("Enter");
    await page.locator(".tab.active", { hasText: "Transcript:" }).waitFor();
    const text = await waitActive((t) => t.includes(instruction) && t.includes("**running**"), "the header and the running state");
    return { text, tabs: await tabs() };
  });

  const seen = [];
  await step("first-sentence", async () => {
    const text = await waitActive((t) => agentLines(t).length > 0, "the agent's first sentence", 30000, seen);
    return { text, agent: agentLines(text), status: await waitStatus("running") };
  });

  await step("second-sentence", async () => {
    const text = await waitActive((t) => agentLines(t).some((l) => l.includes(second)), "the second sentence", 30000, seen);
    return { text, agent: agentLines(text), seenAgent: seen.map(agentLines) };
  });

  await step("ready-for-review", async () => {
    const text = await waitActive((t) => t.includes("**review**"), "the review state in the transcript", 30000, seen);
    return { text, status: await waitStatus("ready for review", 20000), tabs: await tabs(), seenAgent: seen.map(agentLines) };
  });

  await step("read-only", async () => {
    // Typing into the transcript changes nothing (and makes nothing dirty).
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    const before = await activeText();
    await page.keyboard.type("xyz");
    await page.waitForTimeout(500);
    const after = await activeText();
    return { unchanged: before === after, tabs: await tabs(), text: after };
  });

  await step("closed", async () => {
    await palette("View: Close Editor");
    await page.waitForFunction(() => ![...document.querySelectorAll(".tabs-container .tab")].some((t) => (t.getAttribute("aria-label") ?? "").includes("Transcript:")));
    return { tabs: await tabs() };
  });

  // The task's life in the log: an accept that conflicts with the user's edit, settled by
  // the toast's "Keep mine" (a reject).
  const lens = (re) => page.locator(".editor-group-container.active .codelens-decoration a", { hasText: re }).first();
  await step("conflict", async () => {
    await page.locator(`.editor-group-container.active .tab.active[aria-label*="${file}"]`).waitFor();
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+Home");
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("End");
    await page.keyboard.type("  # mine");
    // Said beforehand: the hunk's lenses name the conflict and the ways to settle it.
    await lens(/Conflicts with your edits: Keep mine$/).waitFor({ timeout: 20000 });
    const lenses = await page.locator(".editor-group-container.active .codelens-decoration a").allInnerTexts();
    await palette("Baton: Accept Hunk"); // the cursor is on the hunk's line
    const toast = page.locator(".notifications-toasts .notification-list-item", { hasText: "Keep mine" });
    await toast.first().waitFor({ timeout: 15000 });
    const buttons = await toast.first().locator(".monaco-button").allInnerTexts();
    return { toast: await toast.first().innerText(), text: await activeText(), lenses, buttons };
  });

  await step("rejected", async () => {
    const toast = page.locator(".notifications-toasts .notification-list-item", { hasText: "Keep mine" });
    await toast.first().locator(".monaco-button", { hasText: /^Keep mine$/ }).click();
    return { status: await waitStatus("idle", 20000), text: await activeText() };
  });
  log("done");
} finally {
  await context.close();
}
