// A newcomer's first run, driven in code-server in headless Chromium: a fresh profile, no
// `baton` anywhere. The extension offers to install the server; the user clicks "Install
// Server"; a progress notification follows the install; the server starts (status idle);
// a delegation reaches review and is accepted; "Baton: Open Server Settings" lands where the
// machine-scoped baton.server.path is listed. A screenshot per step. Run by
// tests/e2e/test_vscode.py (test_fresh_profile_installs_the_server_and_delegates).
//
// Env: as harness.mjs; BATON_E2E_INSTRUCTION, BATON_E2E_FILE (as drive.mjs).
// Prints one JSON line per step on stdout; exits 1 with the failing step on stderr.
import { drive, env } from "./harness.mjs";
import { nbsp } from "./workbench.mjs";

const instruction = env("BATON_E2E_INSTRUCTION");
const file = env("BATON_E2E_FILE");

await drive(async (wb) => {
  const { page, step, palette, statusLabel, waitStatus, editorText, waitEditor, toast } = wb;

  await step("install-offered", async () => {
    await wb.openWorkbench();
    const offer = toast("no Baton language server found");
    await offer.waitFor({ timeout: 60000 });
    const text = nbsp(await offer.locator(".notification-list-item-message").innerText());
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
    await wb.openFile(file);
    return { text: await waitEditor((t) => t.includes("return 1") && t.includes("return 2"), "the file") };
  });

  await step("delegated", async () => {
    await wb.selectAll();
    await wb.delegate(instruction);
    return { status: await waitStatus("1 running", 30000) };
  });

  await step("ready-for-review", async () => {
    const status = await waitStatus("ready for review", 60000);
    await page.locator(".editor-instance .codelens-decoration a", { hasText: /^Accept$/ }).nth(1).waitFor();
    return { status, text: await editorText() };
  });

  await step("all-accepted", async () => {
    await wb.clickEditor();
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
});
