// Drives code-server in headless Chromium: delegate a task, open "Baton: Inspect Task" while
// the fake agent streams, and watch its transcript grow sentence by sentence in a read-only
// document (never an untitled, dirty one) until the task is ready for review. Run by
// tests/e2e/test_vscode_transcript.py; one JSON line per step on stdout, a screenshot each.
//
// Env: as harness.mjs; BATON_E2E_INSTRUCTION, BATON_E2E_FILE, BATON_E2E_FIRST and
//      BATON_E2E_SECOND (the agent's two sentences, said with a pause between them).
import { drive, env } from "./harness.mjs";
import { ACTIVE, ACTIVE_EDITOR } from "./workbench.mjs";

const instruction = env("BATON_E2E_INSTRUCTION");
const file = env("BATON_E2E_FILE");
const first = env("BATON_E2E_FIRST");
const second = env("BATON_E2E_SECOND");

/** The agent's lines in a transcript text: those that start one of its two sentences. */
const agentLines = (text) => text.split("\n").filter((l) => l.startsWith(first.slice(0, 10)));

await drive(async (wb) => {
  const { page, step, palette, waitStatus, activeText, waitActive, tabs, toast } = wb;

  await wb.workbenchIdle();
  await wb.fileOpen(file);

  await step("task-running", async () => {
    await wb.delegate(instruction);
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
    await wb.clickEditor(ACTIVE_EDITOR);
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
  await step("conflict", async () => {
    await page.locator(`${ACTIVE} .tab.active[aria-label*="${file}"]`).waitFor();
    await wb.clickEditor(ACTIVE_EDITOR);
    await page.keyboard.press("Control+Home");
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("End");
    await page.keyboard.type("  # mine");
    // Said beforehand: the hunk's lenses name the conflict and the ways to settle it.
    await wb.lens(/Conflicts with your edits: Keep mine$/, ACTIVE).waitFor({ timeout: 20000 });
    const lenses = await wb.lensTexts(ACTIVE);
    await palette("Baton: Accept Hunk"); // the cursor is on the hunk's line
    const offer = toast("Keep mine");
    await offer.first().waitFor({ timeout: 15000 });
    const buttons = await offer.first().locator(".monaco-button").allInnerTexts();
    return { toast: await offer.first().innerText(), text: await activeText(), lenses, buttons };
  });

  await step("rejected", async () => {
    await toast("Keep mine").first().locator(".monaco-button", { hasText: /^Keep mine$/ }).click();
    return { status: await waitStatus("idle", 20000), text: await activeText() };
  });
});
