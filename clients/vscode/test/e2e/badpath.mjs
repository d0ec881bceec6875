// A baton.server.path typed item by item, driven in code-server in headless Chromium: first
// a bare `baton` (no `lsp`: it prints its usage and exits), then a path that does not exist,
// then the right command. Each wrong value fails once, without restarts, and the whole run
// shows one error message; the right value starts the server. The machine settings file is
// rewritten here, as the Settings editor would. A screenshot per step. Run by
// tests/e2e/test_vscode.py (test_bad_server_path_fails_once_without_restarts).
//
// Env: as harness.mjs; BATON_E2E_MACHINE_SETTINGS (the Machine/settings.json to rewrite),
//      BATON_E2E_BATON (a working `baton` program).
/* global window, MutationObserver -- inside page.evaluate, run in the page */
import { writeFileSync } from "node:fs";
import { drive, env } from "./harness.mjs";

const machine = env("BATON_E2E_MACHINE_SETTINGS");
const baton = env("BATON_E2E_BATON");

function setServerPath(value) {
  writeFileSync(machine, JSON.stringify({ "baton.server.path": value }, null, 2));
}

await drive(async ({ page, step, openWorkbench, statusLabel, waitStatus }) => {
  /** Every Baton message shown so far, toasts that hid included: a MutationObserver in the
   * page records each notification's text once. */
  async function recordToasts() {
    await page.evaluate(() => {
      window.__batonToasts = [];
      const seen = new Set();
      const scan = () => {
        for (const el of document.querySelectorAll(".notification-list-item-message")) {
          const text = (el.textContent ?? "").replace(/\u00a0/g, " ");
          if (text.startsWith("Baton") && !seen.has(text)) {
            seen.add(text);
            window.__batonToasts.push(text);
          }
        }
      };
      new MutationObserver(scan).observe(document.body, { childList: true, subtree: true, characterData: true });
      scan();
    });
  }
  const toasts = () => page.evaluate(() => window.__batonToasts ?? []);

  await step("bare-baton-failed", async () => {
    await openWorkbench();
    await recordToasts();
    const status = await waitStatus("not running", 60000);
    await page.waitForFunction(() => (window.__batonToasts ?? []).length > 0, null, { timeout: 20000 });
    // Long enough for the language client's own restarts (it would retry at once).
    await page.waitForTimeout(6000);
    return { status, toasts: await toasts() };
  });

  await step("missing-path-failed", async () => {
    setServerPath(["/nowhere/bin/baton", "lsp"]);
    await page.waitForTimeout(6000);
    return { status: await statusLabel(), toasts: await toasts() };
  });

  await step("right-path-started", async () => {
    setServerPath([baton, "lsp"]);
    const status = await waitStatus("idle", 60000);
    await page.waitForTimeout(2000);
    return { status, toasts: await toasts() };
  });
});
