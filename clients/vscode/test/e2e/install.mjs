// A newcomer's first run, driven in code-server in headless Chromium: a fresh profile, no
// `baton` anywhere. The extension offers to install the server; the user clicks "Install
// Server"; a progress notification follows the install; the server starts (status idle);
// a delegation reaches review and is accepted; "Baton: Open Server Settings" lands where the
// machine-scoped baton.server.path is listed. A screenshot per step. Run by
// tests/e2e/test_vscode.py (test_fresh_profile_installs_the_server_and_delegates).
//
// Env: as drive.mjs (BATON_E2E_URL, _ARTIFACTS, _PROFILE, _CHROMIUM, _INSTRUCTION, _FILE).
// Prints one JSON line per step on stdout; exits 1 with the failing step on stderr.
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

const STATUS_ID = "baton.baton.baton.status";
const statusLabel = () => page.evaluate((id) => document.getElementById(id)?.getAttribute("aria-label") ?? "", STATUS_ID);

async function waitStatus(part, timeout = 30000) {
  await page.waitForFunction(
    ([id, p]) => (document.getElementById(id)?.getAttribute("aria-label") ?? "").includes(p),
    [STATUS_ID, part],
    { timeout },
  );
  return statusLabel();
}

/** The toast that contains ``text`` (a locator). */
const toast = (text) => page.locator(".notifications-toasts .notification-list-item", { hasText: text });

async function editorText() {
  const text = await page.locator(".editor-instance .monaco-editor .view-lines").first().innerText();
  return text.replace(/\u00a0/g, " ");
}

async function waitEditor(pred, what, timeout = 15000) {
  const deadline = Date.now() + timeout;
  let text = "";
  while (Date.now() < deadline) {
    text = await editorText();
    if (pred(text)) return text;
    await page.waitForTimeout(100);
  }
  throw new Error(`editor never showed ${what}; it shows:\n${text}`);
}

async function palette(command) {
  await page.keyboard.press("Control+Shift+P");
  const input = page.locator(".quick-input-widget input.input");
  await input.waitFor({ state: "visible" });
  await input.fill(`>${command}`);
  const focusedIs = () =>
    page.evaluate((c) => {
      const row = document.querySelector(".quick-input-widget .monaco-list-row.focused");
      return (row?.querySelector(".label-name")?.textContent?.replace(/\u00a0/g, " ") ?? "") === c;
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

  await step("install-offered", async () => {
    await page.goto(url);
    await page.locator(".monaco-workbench").waitFor({ timeout: 30000 });
    const offer = toast("no Baton language server found");
    await offer.waitFor({ timeout: 60000 });
    const text = (await offer.locator(".notification-list-item-message").innerText()).replace(/\u00a0/g, " ");
    const buttons = await offer.locator(".monaco-button").allInnerTexts();
    return { toast: text, buttons, status: await waitStatus("no server found") };
  });

  await step("welcome-view", async () => {
    // The Baton activity-bar view says what is missing and offers the install too.
    await page.locator('.activitybar .action-item a[aria-label^="Baton"]').first().click();
    const welcome = page.locator(".welcome-view-content", { hasText: "No Baton language server was found" });
    await welcome.waitFor();
    return { welcome: await welcome.innerText(), buttons: await welcome.locator(".monaco-button").allInnerTexts() };
  });

  await step("installing", async () => {
    await toast("no Baton language server found").locator(".monaco-button", { hasText: "Install Server" }).click();
    const progress = toast("installing the server");
    await progress.waitFor({ timeout: 30000 });
    // Let pip get going so the screenshot shows a step of it.
    const seen = new Set();
    const deadline = Date.now() + 20000;
    while (Date.now() < deadline && seen.size < 3 && (await progress.count()) > 0) {
      const t = await progress.first().innerText().catch(() => "");
      if (t) seen.add(t.replace(/\s+/g, " ").trim());
      await page.waitForTimeout(200);
    }
    return { progress: [...seen].join(" | "), status: await statusLabel() };
  });

  await step("server-started", async () => {
    // pip installs baton-lsp and its dependencies: minutes on a slow machine.
    return { status: await waitStatus("idle", 420000) };
  });

  await step("file-open", async () => {
    await page.keyboard.press("Control+P");
    const input = page.locator(".quick-input-widget input.input");
    await input.waitFor({ state: "visible" });
    await input.fill(file);
    await page.waitForSelector(`.quick-input-widget .monaco-list-row[aria-label*="${file}"]`);
    await page.keyboard.press("Enter");
    await page.locator(`.tab.active[aria-label*="${file}"]`).waitFor();
    return { text: await waitEditor((t) => t.includes("return 1") && t.includes("return 2"), "the file") };
  });

  await step("delegated", async () => {
    await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+A");
    await palette("Baton: Delegate Selection…");
    const input = page.locator(".quick-input-widget input.input");
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "Baton: Delegate" }).waitFor();
    await input.fill(instruction);
    await page.locator(".quick-input-widget .monaco-list-row.focused", { hasText: instruction }).waitFor();
    await page.keyboard.press("Enter");
    return { status: await waitStatus("1 running", 30000) };
  });

  await step("ready-for-review", async () => {
    const status = await waitStatus("ready for review", 60000);
    await page.locator(".editor-instance .codelens-decoration a", { hasText: /^Accept$/ }).nth(1).waitFor();
    return { status, text: await editorText() };
  });

  await step("all-accepted", async () => {
    await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
    await palette("Baton: Accept All Hunks");
    const text = await waitEditor((t) => /return 10\b/.test(t) && /return 20\b/.test(t), "both hunks accepted");
    return { text, status: await waitStatus("idle", 30000) };
  });

  await step("server-settings", async () => {
    await palette("Baton: Open Server Settings");
    const editor = page.locator(".settings-editor");
    await editor.waitFor();
    const label = editor.locator(".setting-item-contents", { hasText: "baton.server.path" }).or(
      editor.locator(".setting-item-contents", { hasText: /Server:\s*Path/ }),
    );
    let found = true;
    try {
      await label.first().waitFor({ timeout: 10000 });
    } catch {
      found = false;
    }
    const tab = await editor.locator(".settings-tabs-widget .action-label.checked").first().innerText().catch(() => "");
    const items = await editor.locator(".setting-item-label").allInnerTexts().catch(() => []);
    return { found, tab, items };
  });
  log("done");
} finally {
  await context.close();
}
