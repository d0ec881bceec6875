// A baton.server.path typed item by item, driven in code-server in headless Chromium: first
// a bare `baton` (no `lsp`: it prints its usage and exits), then a path that does not exist,
// then the right command. Each wrong value fails once, without restarts, and the whole run
// shows one error message; the right value starts the server. The machine settings file is
// rewritten here, as the Settings editor would. A screenshot per step. Run by
// tests/e2e/test_vscode.py (test_bad_server_path_fails_once_without_restarts).
//
// Env: BATON_E2E_URL, _ARTIFACTS, _PROFILE, _CHROMIUM as drive.mjs;
//      BATON_E2E_MACHINE_SETTINGS (the Machine/settings.json to rewrite),
//      BATON_E2E_BATON (a working `baton` program).
/* global window, MutationObserver -- inside page.evaluate, run in the page */
import { chromium } from "playwright-core";
import { mkdirSync, writeFileSync } from "node:fs";
import { env, harness } from "./harness.mjs";

const url = env("BATON_E2E_URL");
const artifacts = env("BATON_E2E_ARTIFACTS");
const machine = env("BATON_E2E_MACHINE_SETTINGS");
const baton = env("BATON_E2E_BATON");
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

function setServerPath(value) {
  writeFileSync(machine, JSON.stringify({ "baton.server.path": value }, null, 2));
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

  await step("bare-baton-failed", async () => {
    await page.goto(url);
    await page.locator(".monaco-workbench").waitFor({ timeout: 30000 });
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
  log("done");
} finally {
  await context.close();
}
