// Drives code-server in headless Chromium: a task's two hunks both conflict with the user's
// edits of their lines; the lenses say so before any accept; "Merge view" opens the diff
// editor beside the agent's read-only version, "Ask the agent to redo it" runs a turn whose
// new hunk applies, "Take theirs" replaces the user's line. Run by
// tests/e2e/test_vscode_resolve.py; one JSON line per step on stdout, a screenshot each.
//
// Env: as harness.mjs; BATON_E2E_INSTRUCTION, BATON_E2E_FILE.
import { drive, env } from "./harness.mjs";
import { ACTIVE, ACTIVE_EDITOR, nbsp } from "./workbench.mjs";

const instruction = env("BATON_E2E_INSTRUCTION");
const file = env("BATON_E2E_FILE");

await drive(async (wb) => {
  const { page, step, palette, waitStatus, activeText, waitActive, tabs } = wb;
  const lens = (re) => wb.lens(re, ACTIVE);
  const waitLenses = (pred, what) => wb.waitLenses(pred, what, 30000, ACTIVE);
  const conflicting = (l) => l.filter((x) => x.endsWith("Conflicts with your edits: Keep mine")).length;

  await wb.workbenchIdle();
  await wb.fileOpen(file);

  await step("task-running", async () => {
    await wb.delegate(instruction);
    return { status: await waitStatus("ready for review", 60000) };
  });

  await step("edited", async () => {
    await lens(/^Accept$/).waitFor();
    await wb.clickEditor(ACTIVE_EDITOR);
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
    const diff = page.locator(`${ACTIVE} .monaco-diff-editor`);
    await diff.waitFor();
    const right = diff.locator(".editor.modified .view-lines").first();
    const left = diff.locator(".editor.original .view-lines").first();
    const deadline = Date.now() + 20000;
    while (!nbsp(await right.innerText()).includes("return 20") && Date.now() < deadline) await page.waitForTimeout(100);
    const out = { tabs: await tabs(), mine: nbsp(await left.innerText()), theirs: nbsp(await right.innerText()) };
    // the agent's side is read-only: typing there changes nothing
    await right.click();
    await page.keyboard.type("xyz");
    await page.waitForTimeout(300);
    out.theirsAfterTyping = nbsp(await right.innerText());
    await palette("View: Close Editor");
    await page.locator(`${ACTIVE} .tab.active[aria-label*="${file}"]`).waitFor();
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
});
