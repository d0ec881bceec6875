// The steps a user takes in code-server's workbench, and what a driver reads back from the
// page, shared by every driver in this folder: the Baton status-bar item, Quick Open and the
// command palette, the editor's text, the proposals' ghost texts and CodeLenses, tabs,
// notifications and the task view.

/** The Baton status-bar item's element id (its accessible label is the tooltip). */
export const STATUS_ID = "baton.baton.baton.status";
/** The editor group that has the focus. */
export const ACTIVE = ".editor-group-container.active";
/** The first file editor of the workbench (the one a driver has opened). */
export const EDITOR = ".editor-instance .monaco-editor";
/** The editor of the active group. */
export const ACTIVE_EDITOR = `${ACTIVE} .monaco-editor`;

/** ``s`` with Monaco's non-breaking spaces as spaces. */
export const nbsp = (s) => (s ?? "").replace(/\u00a0/g, " ");
/** ``s`` with non-breaking spaces as spaces, trimmed. */
export const clean = (s) => nbsp(s).trim();
/** How many times ``x`` is in ``list``. */
export const count = (list, x) => list.filter((v) => v === x).length;

/** The workbench helpers of ``page``, a code-server tab whose address is ``url``. */
export function workbench(page, url) {
  /** Poll ``read()`` until ``pred`` holds of what it returns (that value), pushing each new
   * value onto ``seen`` when given; fail after ``timeout`` ms saying what was last read. */
  async function waitFor(read, pred, what, timeout = 30000, seen = undefined) {
    const deadline = Date.now() + timeout;
    let v;
    while (Date.now() < deadline) {
      v = await read();
      if (seen && seen.at(-1) !== v) seen.push(v);
      if (pred(v)) return v;
      await page.waitForTimeout(100);
    }
    throw new Error(`never saw ${what}; saw: ${typeof v === "string" ? `\n${v}` : JSON.stringify(v)}`);
  }

  // The status bar.
  const status = () => page.locator(`[id="${STATUS_ID}"]`);
  const statusLabel = () => page.evaluate((id) => document.getElementById(id)?.getAttribute("aria-label") ?? "", STATUS_ID);

  /** Wait until the status item's label contains ``part``; that label. */
  async function waitStatus(part, timeout = 30000) {
    await page.waitForFunction(
      ([id, p]) => (document.getElementById(id)?.getAttribute("aria-label") ?? "").includes(p),
      [STATUS_ID, part],
      { timeout },
    );
    return statusLabel();
  }

  /** Load the workbench; wait until it is drawn. */
  async function openWorkbench() {
    await page.goto(url);
    await page.locator(".monaco-workbench").waitFor({ timeout: 30000 });
  }

  // Quick input: Quick Open, the command palette, quick picks.
  const quickInput = () => page.locator(".quick-input-widget input.input");

  /** Open ``file`` by Quick Open (Ctrl+P); wait until its tab is the active one. */
  async function openFile(file) {
    await page.keyboard.press("Control+P");
    await quickInput().waitFor({ state: "visible" });
    await quickInput().fill(file);
    await page.waitForSelector(`.quick-input-widget .monaco-list-row[aria-label*="${file}"]`);
    await page.keyboard.press("Enter");
    await page.locator(`.tab.active[aria-label*="${file}"]`).waitFor();
  }

  /** The rows of the open quick pick: label, description and detail as drawn. */
  async function pickRows() {
    return page.evaluate(() =>
      [...document.querySelectorAll(".quick-input-widget .monaco-list-row")].map((row) => {
        const text = (sel) => (row.querySelector(sel)?.textContent ?? "").replace(/\u00a0/g, " ").trim();
        return {
          label: text(".label-name"),
          description: text(".label-description"),
          text: (row.innerText ?? "").replace(/\u00a0/g, " "),
          aria: row.getAttribute("aria-label") ?? "",
          icon: !!row.querySelector(".label-name .codicon-check"),
        };
      }),
    );
  }

  /** Move the quick pick's focus to the row whose label is ``label``, and take it (Enter):
   * other rows may match the text typed too. */
  async function choose(label) {
    const focused = () =>
      page.evaluate(() => (document.querySelector(".quick-input-widget .monaco-list-row.focused .label-name")?.textContent ?? "").replace(/\u00a0/g, " ").trim());
    await page.locator(".quick-input-widget .monaco-list-row.focused").waitFor();
    for (let i = 0; i < 20 && (await focused()) !== label; i++) {
      await page.keyboard.press("ArrowDown");
      await page.waitForTimeout(50);
    }
    if ((await focused()) !== label) throw new Error(`no row "${label}" in the pick: ${JSON.stringify(await pickRows())}`);
    await page.keyboard.press("Enter");
  }

  /** Run ``command`` (its title as the palette shows it) from the command palette. */
  async function palette(command) {
    await page.keyboard.press("Control+Shift+P");
    await quickInput().waitFor({ state: "visible" });
    await quickInput().fill(`>${command}`);
    await page.waitForFunction(
      (c) =>
        [...document.querySelectorAll(".quick-input-widget .monaco-list-row .label-name")].some(
          (e) => (e.textContent ?? "").replace(/\u00a0/g, " ") === c,
        ),
      command,
      { timeout: 10000 },
    );
    await choose(command);
  }

  /** Type ``instruction`` into the open "Baton: Delegate" input box (not sent yet); the
   * box's title. */
  async function typeInstruction(instruction) {
    const title = page.locator(".quick-input-widget .quick-input-title", { hasText: "Baton: Delegate" });
    await title.waitFor();
    await quickInput().fill(instruction);
    await page.locator(".quick-input-widget .monaco-list-row.focused", { hasText: instruction }).waitFor();
    return title.innerText();
  }

  /** "Baton: Delegate Selection…" with ``instruction``, sent. */
  async function delegate(instruction) {
    await palette("Baton: Delegate Selection…");
    await typeInstruction(instruction);
    await page.keyboard.press("Enter");
  }

  // The editor.
  const view = (scope = EDITOR) => page.locator(`${scope} .view-lines`).first();
  /** Put the focus in the editor in ``scope`` (the first file editor). */
  const clickEditor = (scope = EDITOR) => view(scope).click();

  /** Select the whole file editor's text; wait until the selection is drawn. */
  async function selectAll() {
    await clickEditor();
    await page.keyboard.press("Control+A");
    await page.locator(`${EDITOR} .selected-text`).first().waitFor();
  }

  /** The text of the editor in ``scope`` (Monaco renders spaces as non-breaking ones). */
  const editorText = async (scope = EDITOR) => nbsp(await view(scope).innerText());
  /** The text of the editor of the active group. */
  const activeText = () => editorText(ACTIVE_EDITOR);
  const waitEditor = (pred, what, timeout = 15000) => waitFor(editorText, pred, `the editor show ${what}`, timeout);
  const waitActive = (pred, what, timeout = 20000, seen = undefined) =>
    waitFor(activeText, pred, `the editor show ${what}`, timeout, seen);

  async function editorHasFocus() {
    return page.evaluate((sel) => {
      const a = document.activeElement;
      return !!a && !!a.closest(sel);
    }, EDITOR);
  }

  /** Ghost texts drawn by decorations (CSS ::after content) under ``root``, in document order. */
  async function ghosts(root = `${EDITOR} .view-lines`) {
    return page.evaluate((sel) => {
      const out = [];
      for (const el of document.querySelector(sel)?.querySelectorAll("span") ?? []) {
        const c = getComputedStyle(el, "::after").content;
        if (c && c !== "none" && c !== "normal" && c !== '""') out.push(JSON.parse(c.replace(/^'|'$/g, '"')));
      }
      return out;
    }, root);
  }
  const waitGhosts = (pred, what, timeout = 15000) => waitFor(ghosts, pred, what, timeout);

  /** The CodeLens links (text) shown in the editors under ``scope``. */
  const lensTexts = (scope = ".editor-instance") => page.locator(`${scope} .codelens-decoration a`).allInnerTexts();
  const waitLenses = (pred, what, timeout = 10000, scope = ".editor-instance") =>
    waitFor(() => lensTexts(scope), pred, `the lenses show ${what}`, timeout);
  /** The first lens under ``scope`` whose text matches ``re``. */
  const lens = (re, scope = ".editor-instance") => page.locator(`${scope} .codelens-decoration a`, { hasText: re }).first();
  /** Click the first lens labelled ``label`` (a regular expression's source, anchored). */
  const clickLens = (label) => lens(new RegExp(`^${label}$`)).click();

  // Tabs, notifications, the task view.
  async function tabs() {
    return page.evaluate(() =>
      [...document.querySelectorAll(".tabs-container .tab")].map((t) => ({
        label: t.getAttribute("aria-label") ?? "",
        dirty: t.classList.contains("dirty"),
        active: t.classList.contains("active"),
      })),
    );
  }

  /** The toast that contains ``text`` (a locator). */
  const toast = (text) => page.locator(".notifications-toasts .notification-list-item", { hasText: text });
  /** The texts of the toasts shown. */
  const toasts = () =>
    page.evaluate(() => [...document.querySelectorAll(".notifications-toasts .notification-list-item")].map((e) => (e.innerText ?? "").replace(/\u00a0/g, " ")));

  /** The rows of Baton's task view (their accessible labels). */
  const viewRows = () =>
    page.evaluate(() =>
      [...document.querySelectorAll(".pane-body .monaco-list-row")]
        .filter((r) => r.closest('[id*="baton.tasks"]') ?? r.closest(".pane")?.querySelector('.pane-header[aria-label*="Tasks"]'))
        .map((r) => (r.getAttribute("aria-label") ?? "").replace(/\u00a0/g, " ")),
    );

  return {
    waitFor,
    status,
    statusLabel,
    waitStatus,
    openWorkbench,
    quickInput,
    openFile,
    pickRows,
    choose,
    palette,
    typeInstruction,
    delegate,
    clickEditor,
    selectAll,
    editorText,
    activeText,
    waitEditor,
    waitActive,
    editorHasFocus,
    ghosts,
    waitGhosts,
    lensTexts,
    waitLenses,
    lens,
    clickLens,
    tabs,
    toast,
    toasts,
    viewRows,
  };
}
