// Drives code-server in headless Chromium through Baton's review flow, one checked step at
// a time, saving a screenshot per step. Run by tests/e2e/test_vscode.py, which starts
// code-server with the .vsix installed and the real `baton lsp`; this script only clicks
// and types like a user and checks what the page shows.
//
// Env: as harness.mjs; BATON_E2E_INSTRUCTION (what to type), BATON_E2E_FILE (file to open,
//      e.g. app.py).
// Prints one JSON line per step on stdout; exits 1 with the failing step on stderr.
import { drive, env } from "./harness.mjs";
import { count, EDITOR, nbsp } from "./workbench.mjs";

const instruction = env("BATON_E2E_INSTRUCTION");
const file = env("BATON_E2E_FILE");

await drive(async (wb) => {
  const { page, step, status, statusLabel, waitStatus, editorText, waitEditor, ghosts, waitGhosts } = wb;
  const { lensTexts, waitLenses, clickLens, editorHasFocus, palette } = wb;

  // The server is up and no task is running: the item says idle.
  await wb.workbenchIdle();

  await step("file-open", async () => {
    await wb.openFile(file);
    const text = await waitEditor((t) => t.includes("return 1") && t.includes("return 2"), "the file");
    return { text };
  });

  await step("lines-selected", async () => {
    await wb.clickEditor();
    await page.keyboard.press("Control+Home");
    for (let i = 0; i < 6; i++) await page.keyboard.press("Shift+ArrowDown");
    await page.locator(`${EDITOR} .selected-text`).first().waitFor();
  });

  await step("instruction-typed", async () => {
    await palette("Baton: Delegate Selection…");
    return { title: await wb.typeInstruction(instruction) };
  });

  await step("task-running", async () => {
    await page.keyboard.press("Enter");
    const label = await waitStatus("1 running", 20000);
    const text = await status().innerText();
    // The delegation says it started, with the task's title and id.
    const toast = page.locator(".notifications-toasts .notification-list-item-message", { hasText: "Baton: started" });
    await toast.first().waitFor({ timeout: 20000 });
    return { status: label, text, started: await toast.first().innerText() };
  });

  await step("draft-shown", async () => {
    // The worker's first edit arrives as a draft: ghost text and a "working…" lens.
    const g = await waitGhosts((g) => g.some((t) => t.includes("return 10")), "the draft's ghost text", 20000);
    await page.locator(".editor-instance .codelens-decoration", { hasText: "working" }).waitFor();
    return { lenses: await lensTexts(), ghosts: g, running: await statusLabel() };
  });

  await step("ready-for-review", async () => {
    const label = await waitStatus("ready for review", 30000);
    await page.locator(".editor-instance .codelens-decoration a", { hasText: /^Accept$/ }).nth(1).waitFor();
    const g = await waitGhosts((g) => g.includes("→ return 10") && g.includes("→ return 20"), "both hunks");
    return { status: label, lenses: await lensTexts(), ghosts: g, text: await editorText(), focusInEditor: await editorHasFocus() };
  });

  await step("diff-opened", async () => {
    await clickLens("Open diff");
    const diff = page.locator(".editor-instance .monaco-diff-editor");
    await diff.waitFor();
    await page.locator(".tab.active", { hasText: "Baton:" }).waitFor();
    const modified = diff.locator(".editor.modified .view-lines");
    const deadline = Date.now() + 10000;
    let text = "";
    while (Date.now() < deadline && !(text.includes("return 10") && text.includes("return 20"))) {
      text = nbsp(await modified.innerText());
      await page.waitForTimeout(100);
    }
    if (!text.includes("return 20")) throw new Error(`the proposal side shows:\n${text}`);
    const tab = await page.locator(".tab.active").getAttribute("aria-label");
    return { proposal: text, tab };
  });

  await step("diff-closed", async () => {
    await palette("View: Close Editor");
    await page.locator('.tab.active[aria-label*="app.py"]').waitFor();
    await page.locator(".editor-instance .monaco-diff-editor").waitFor({ state: "detached" });
  });

  await step("hunk-accepted", async () => {
    await clickLens("Accept");
    const text = await waitEditor((t) => /^\s*return 10\s*$/m.test(t), "the accepted hunk");
    const g = await waitGhosts((g) => !g.includes("→ return 10"), "the accepted hunk's ghost gone");
    if (!g.includes("→ return 20")) throw new Error("the second hunk's proposal vanished");
    const lenses = await waitLenses(
      (l) => count(l, "Accept") === 1 && count(l, "Reject") === 1 && !l.some((x) => x.includes("Accept all")),
      "one hunk left",
    );
    // Where the accepted text is (the editor; the disk too with auto save) is said.
    const saved = page.locator(".statusbar-item", { hasText: "Baton: accepted into" });
    await saved.first().waitFor({ timeout: 10000 });
    return { text, ghosts: g, lenses, saved: await saved.first().innerText() };
  });

  await step("accept-undone", async () => {
    // Accepting left the focus in the editor: Ctrl+Z goes straight to it. The undo is a
    // decision: the hunk is pending again, drawn and reviewable again.
    if (!(await editorHasFocus())) throw new Error("the focus left the editor after accept");
    await page.keyboard.press("Control+Z");
    const text = await waitEditor((t) => /^\s*return 1\s*$/m.test(t) && !t.includes("return 10"), "the undone text");
    const g = await waitGhosts((g) => g.includes("→ return 10") && g.includes("→ return 20"), "the undone hunk drawn again");
    const lenses = await waitLenses((l) => count(l, "Accept") === 2, "the undone hunk reviewable again");
    return { text, ghosts: g, lenses, status: await waitStatus("ready for review"), focusInEditor: await editorHasFocus() };
  });

  await step("accept-redone", async () => {
    await page.keyboard.press("Control+Shift+Z");
    const text = await waitEditor((t) => /^\s*return 10\s*$/m.test(t), "the redone hunk");
    const g = await waitGhosts((g) => g.length === 1 && g[0] === "→ return 20", "only the other hunk drawn");
    const lenses = await waitLenses((l) => count(l, "Accept") === 1, "one hunk left after the redo");
    return { text, ghosts: g, lenses };
  });

  await step("redo-undone", async () => {
    await page.keyboard.press("Control+Z");
    await waitEditor((t) => !t.includes("return 10"), "the redo undone");
    const lenses = await waitLenses((l) => l.some((x) => x.includes("Accept all (2)")), "both hunks pending");
    return { lenses, ghosts: await ghosts() };
  });

  await step("all-accepted", async () => {
    const all = page.locator(".editor-instance .codelens-decoration a", { hasText: "Accept all (2)" });
    await all.first().click();
    const text = await waitEditor((t) => /^\s*return 10\s*$/m.test(t) && /^\s*return 20\s*$/m.test(t), "accept-all");
    const g = await waitGhosts((g) => g.length === 0, "no proposal left");
    const lenses = await waitLenses((l) => l.length === 0, "no lens left");
    return { text, ghosts: g, lenses, status: await waitStatus("idle", 20000) };
  });

  await step("all-undone", async () => {
    // The task is applied; one Ctrl+Z takes the whole accept back: in review again.
    if (!(await editorHasFocus())) await wb.clickEditor();
    await page.keyboard.press("Control+Z");
    const text = await waitEditor((t) => !t.includes("return 10") && !t.includes("return 20"), "accept-all undone");
    const g = await waitGhosts((g) => g.includes("→ return 10") && g.includes("→ return 20"), "both hunks drawn again");
    const lenses = await waitLenses((l) => l.some((x) => x.includes("Accept all (2)")), "both reviewable again");
    return { text, ghosts: g, lenses, status: await waitStatus("ready for review", 20000) };
  });

  await step("all-redone", async () => {
    await page.keyboard.press("Control+Shift+Z");
    const text = await waitEditor((t) => /^\s*return 10\s*$/m.test(t) && /^\s*return 20\s*$/m.test(t), "accept-all redone");
    const g = await waitGhosts((g) => g.length === 0, "no proposal after the redo");
    const lenses = await waitLenses((l) => l.length === 0, "no lens after the redo");
    return { text, ghosts: g, lenses };
  });

  await step("status-idle", async () => {
    const label = await waitStatus("idle", 20000);
    return { status: label, text: await editorText(), ghosts: await ghosts(), lenses: await lensTexts() };
  });
});
