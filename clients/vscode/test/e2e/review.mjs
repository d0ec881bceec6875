// Drives code-server in headless Chromium through the review of a task whose first hunk
// replaces one line with thirty: its ghost says how many lines follow instead of squashing
// them; "Show 30 proposed lines" peeks at them as real, syntax-coloured lines under the old
// one, while the document stays clean and the file on disk unchanged (auto save on). Run by
// tests/e2e/test_vscode_review.py; one JSON line per step on stdout, a screenshot each.
// The peek has its own Accept / Reject lenses. Then Open Diff: on the proposal side, a
// right-click on a proposed line accepts its hunk, the hover over the other one rejects it;
// the diff editor's title bar keeps a whole file (notes.txt). Last, per file from the task
// view (Keep File on extra.txt, never opened) and the editor's title bar (Undo File on
// more.py), which decides the task.
//
// Env: as harness.mjs; BATON_E2E_INSTRUCTION, BATON_E2E_FILE, BATON_E2E_REPO (the folder
//      opened, to read the file on disk).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { drive, env } from "./harness.mjs";
import { ACTIVE, nbsp } from "./workbench.mjs";

const instruction = env("BATON_E2E_INSTRUCTION");
const file = env("BATON_E2E_FILE");
const onDisk = () => readFileSync(join(env("BATON_E2E_REPO"), file), "utf8");
/** The file editor of the active group (not a peek's embedded editor, not a diff's). */
const FILE_EDITOR = `${ACTIVE} .editor-instance > .monaco-editor`;

await drive(
  async (wb) => {
    const { page, step, palette, waitStatus, waitFor, tabs, openFile, viewRows } = wb;
    const fileEditor = () => page.locator(FILE_EDITOR).first();
    const fileText = async () => nbsp(await fileEditor().locator(":scope > .overflow-guard .view-lines").first().innerText());
    /** Ghost texts (CSS ::after content) of the file editor, in document order. */
    const ghosts = () => wb.ghosts(`${FILE_EDITOR} .view-lines`);

    /** The CodeLens links of the file editor (not those of an embedded editor). */
    async function lensTexts() {
      return page.evaluate(() =>
        [...document.querySelectorAll(".editor-group-container.active .editor-instance > .monaco-editor > .overflow-guard .codelens-decoration a")]
          .filter((a) => !a.closest(".peekview-widget"))
          .map((a) => (a.textContent ?? "").replace(/\u00a0/g, " ")),
      );
    }

    async function clickLens(label) {
      const links = fileEditor().locator(".codelens-decoration a", { hasText: new RegExp(`^${label}$`) });
      await links.first().click();
    }

    /** What the peek under a hunk shows: its lines, the distinct token colours of its text, its
     * highlighted lines, and where it stands relative to the file editor's lines. */
    async function peekState() {
      return page.evaluate(() => {
        const peek = document.querySelector(".editor-group-container.active .peekview-widget");
        if (!peek) return undefined;
        const editor = peek.querySelector(".preview .monaco-editor") ?? peek.querySelector(".monaco-editor");
        const lines = [...(editor?.querySelectorAll(".view-lines .view-line") ?? [])]
          .map((l) => ({ top: parseFloat(l.style.top), text: (l.textContent ?? "").replace(/\u00a0/g, " ") }))
          .sort((a, b) => a.top - b.top)
          .map((l) => l.text);
        const colours = new Set();
        for (const span of editor?.querySelectorAll(".view-lines span[class*='mtk']") ?? []) {
          if ((span.textContent ?? "").trim()) colours.add(getComputedStyle(span).color);
        }
        const title = peek.querySelector(".peekview-title")?.textContent ?? "";
        const box = peek.getBoundingClientRect();
        return { lines, colours: [...colours], title, height: Math.round(box.height), highlighted: editor?.querySelectorAll(".reference-decoration").length ?? 0 };
      });
    }

    const before = onDisk();

    await wb.workbenchIdle();
    await wb.fileOpen(file);

    await step("ready-for-review", async () => {
      await wb.delegate(instruction);
      const status = await waitStatus("ready for review", 60000);
      const lenses = await waitFor(lensTexts, (l) => l.some((x) => /^Show \d+ proposed lines$/.test(x)), "the Show proposed lines lens");
      return { status, lenses, ghosts: await ghosts(), text: await fileText() };
    });

    await step("peek-opened", async () => {
      await clickLens("Show 30 proposed lines");
      const peek = await waitFor(peekState, (p) => p !== undefined && p.lines.some((l) => l.includes("total += 1 * 1")) && p.colours.length >= 3, "the peek with the proposed lines, coloured");
      // Auto save (afterDelay) would have written a dirty document by now: nothing is dirty,
      // and the file on disk is what it was.
      await page.waitForTimeout(2500);
      const peekLenses = await waitFor(
        async () => (await page.locator(".editor-group-container.active .peekview-widget .codelens-decoration a").allInnerTexts()).map(nbsp),
        (l) => l.includes("Accept"),
        "Accept / Reject inside the peek",
      );
      return { peek, peekLenses, tabs: await tabs(), disk: onDisk(), before, text: await fileText() };
    });

    await step("peek-scrolled", async () => {
      // a 30-line hunk reads to its end: scroll the peek's editor down
      const editor = page.locator(".editor-group-container.active .peekview-widget .preview .monaco-editor").first();
      await editor.hover();
      const peek = await waitFor(
        async () => {
          await page.mouse.wheel(0, 300);
          return peekState();
        },
        (p) => p?.lines.some((l) => l.includes("return total")),
        "the end of the hunk in the peek",
      );
      return { peek };
    });

    await step("peek-closed", async () => {
      await page.keyboard.press("Escape");
      await page.locator(".editor-group-container.active .peekview-widget").waitFor({ state: "detached" });
      return { tabs: await tabs(), disk: onDisk(), ghosts: await ghosts(), lenses: await lensTexts() };
    });

    const diff = () => page.locator(".editor-group-container.active .monaco-diff-editor").first();
    const sideText = async (side) => nbsp(await diff().locator(`.editor.${side} .view-lines`).first().innerText());
    const rightLenses = async () => (await diff().locator(".editor.modified .codelens-decoration a").allInnerTexts()).map(nbsp);
    const titleActions = () =>
      page.evaluate(() =>
        [...document.querySelectorAll(".editor-group-container.active .editor-actions .action-label")].map((a) => a.getAttribute("aria-label") ?? ""),
      );

    /** Ghost texts drawn over the diff's left side (the file itself). */
    const leftGhosts = () =>
      page.evaluate(() => {
        const out = [];
        for (const el of document.querySelectorAll(".editor-group-container.active .monaco-diff-editor .editor.original .view-lines span")) {
          const c = getComputedStyle(el, "::after").content;
          if (c && c !== "none" && c !== "normal" && c !== '""') out.push(c);
        }
        return out;
      });

    await step("diff-opened", async () => {
      await clickLens("Open diff");
      await diff().waitFor();
      const right = await waitFor(() => sideText("modified"), (t) => t.includes("total = 0") && t.includes("return 20"), "the proposal side");
      const actions = await waitFor(titleActions, (a) => a.some((x) => x.startsWith("Keep File")), "Keep File in the diff's title bar");
      // the left side is the file itself: no ghost of the proposal drawn over it
      await page.waitForTimeout(1500); // the decorations' redraw has come by now
      return { right, actions, leftGhosts: await leftGhosts(), lenses: await rightLenses() };
    });

    /** The line of the proposal side showing `text`. */
    const rightLine = (text) => diff().locator(".editor.modified .view-line", { hasText: text }).first();

    await step("diff-hunk-accepted", async () => {
      // right-click a proposed line: Accept Hunk means the hunk whose proposed lines it is on
      await rightLine("total = 0").click({ button: "right" });
      const item = page.locator(".monaco-menu .action-item:not(.disabled) .action-label", { hasText: /^Accept Hunk$/ }).first();
      await item.waitFor();
      const menu = (await page.locator(".monaco-menu .action-label").allInnerTexts()).map(nbsp).filter((x) => x.trim());
      await item.click();
      // On a loaded machine the menu can take the click before it is ready and stay open with
      // Accept Hunk focused: then Enter chooses it (the menu open means nothing was chosen).
      await page
        .locator(".monaco-menu")
        .first()
        .waitFor({ state: "hidden", timeout: 3000 })
        .catch(() => page.keyboard.press("Enter"));
      const left = await waitFor(() => sideText("original"), (t) => t.includes("total = 0"), "the long hunk accepted into the file (left)", 60000);
      return { left, menu, tabs: await tabs() };
    });

    await step("diff-hover", async () => {
      await page.keyboard.press("Escape");
      // the hover over the other hunk's proposed line (the keyboard's Show Hover, at its text)
      await rightLine("return 20").locator("span span", { hasText: "return" }).first().click();
      await palette("Show or Focus Hover");
      const hover = page.locator(".monaco-hover:visible").first();
      await hover.locator("a", { hasText: /^Reject$/ }).waitFor();
      return { hover: nbsp(await hover.innerText()), leftGhosts: await leftGhosts() };
    });

    await step("diff-hunk-rejected", async () => {
      await page.locator(".monaco-hover:visible a", { hasText: /^Reject$/ }).first().click();
      const right = await waitFor(() => sideText("modified"), (t) => !t.includes("return 20"), "the proposal side without the rejected hunk");
      return { left: await sideText("original"), right, lenses: await rightLenses(), tabs: await tabs() };
    });

    await step("diff-closed", async () => {
      await palette("View: Close Editor");
      await page.locator(`.tab.active[aria-label*="${file}"]`).waitFor();
      return { text: await fileText(), ghosts: await ghosts(), lenses: await lensTexts() };
    });

    await step("notes-diff", async () => {
      await openFile("notes.txt");
      await waitFor(lensTexts, (l) => l.some((x) => x.endsWith("Open diff")), "the notes' Open diff lens");
      await fileEditor().locator(".codelens-decoration a", { hasText: /Open diff$/ }).first().click();
      await diff().waitFor();
      await waitFor(() => sideText("modified"), (t) => t.includes("TWO") && t.includes("FOUR"), "the notes' proposal");
      return { actions: await waitFor(titleActions, (a) => a.some((x) => x.startsWith("Keep File")), "Keep File in the diff's title bar") };
    });

    await step("notes-kept", async () => {
      await page.locator('.editor-group-container.active .editor-actions .action-label[aria-label^="Keep File"]').first().click();
      const left = await waitFor(() => sideText("original"), (t) => t.includes("TWO") && t.includes("FOUR"), "both notes' hunks accepted (left)");
      // nothing left to keep: the title bar's Keep / Undo File go
      const actions = await waitFor(titleActions, (a) => !a.some((x) => x.startsWith("Keep File")), "Keep File gone from the title bar");
      return { left, actions, lenses: await waitFor(rightLenses, (l) => l.length === 0, "no lens left on the notes' proposal") };
    });
    await step("task-view-files", async () => {
      await palette("Baton: Focus on Tasks View");
      const rows = await waitFor(viewRows, (r) => r.some((x) => x.includes("extra.txt")) && r.some((x) => x.includes("more.py")), "the task's files in the task view");
      return { rows };
    });

    await step("task-view-kept", async () => {
      const row = page.locator(".pane-body .monaco-list-row", { hasText: "extra.txt" }).first();
      await row.hover();
      const actions = (await row.locator(".action-label").evaluateAll((els) => els.map((e) => e.getAttribute("aria-label") ?? ""))).filter(Boolean);
      await row.locator('.action-label[aria-label^="Keep File"]').click();
      const rows = await waitFor(viewRows, (r) => !r.some((x) => x.includes("extra.txt")), "extra.txt kept (gone from the task view)");
      return { rows, actions };
    });

    await step("more-open", async () => {
      await openFile("more.py");
      const g = await waitFor(ghosts, (x) => x.length === 2, "more.py's two hunks drawn");
      return { ghosts: g, actions: await waitFor(titleActions, (a) => a.some((x) => x.startsWith("Undo File")), "Undo File in the title bar"), tabs: await tabs() };
    });

    await step("more-undone", async () => {
      await page.locator('.editor-group-container.active .editor-actions .action-label[aria-label^="Undo File"]').first().click();
      const g = await waitFor(ghosts, (x) => x.length === 0, "more.py's hunks gone");
      const status = await waitStatus("idle", 30000);
      const lenses = await waitFor(lensTexts, (l) => l.length === 0, "no lens left on more.py");
      return { ghosts: g, text: await fileText(), lenses, status, tabs: await tabs() };
    });
  },
  { height: 900 },
);
