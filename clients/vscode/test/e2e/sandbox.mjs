// Agents unsandboxed (sandbox = "off" in the user's Baton config), driven in code-server in
// headless Chromium: the status bar item says so plainly, with why and how to fix it in its
// tooltip; once the config is fixed (rewritten here, as the user would) it goes back to idle
// without a reload. A screenshot per step. Run by tests/e2e/test_vscode.py
// (test_status_bar_says_agents_run_unsandboxed).
//
// Env: BATON_E2E_URL, _ARTIFACTS, _PROFILE, _CHROMIUM as drive.mjs;
//      BATON_E2E_USER_CONFIG (Baton's user config file), BATON_E2E_FIXED_CONFIG (its text
//      without sandbox = "off").
import { chromium } from "playwright-core";
import { mkdirSync, writeFileSync } from "node:fs";
import { env, harness } from "./harness.mjs";

const url = env("BATON_E2E_URL");
const artifacts = env("BATON_E2E_ARTIFACTS");
const userConfig = env("BATON_E2E_USER_CONFIG");
const fixedConfig = env("BATON_E2E_FIXED_CONFIG");
mkdirSync(artifacts, { recursive: true });

let page;
const { log, step } = harness(artifacts, () => page);

const STATUS_ID = "baton.baton.baton.status";
const status = () => page.locator(`[id="${STATUS_ID}"]`);
const statusLabel = () => page.evaluate((id) => document.getElementById(id)?.getAttribute("aria-label") ?? "", STATUS_ID);

async function waitStatus(part, timeout = 30000) {
  await page.waitForFunction(
    ([id, p]) => (document.getElementById(id)?.getAttribute("aria-label") ?? "").includes(p),
    [STATUS_ID, part],
    { timeout },
  );
  return statusLabel();
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

  await step("unsandboxed", async () => {
    await page.goto(url);
    await page.locator(".monaco-workbench").waitFor({ timeout: 30000 });
    const label = await waitStatus("UNSANDBOXED", 60000);
    const item = status();
    const warned = await item.evaluate((el) => {
      const bg = getComputedStyle(el.closest(".statusbar-item") ?? el).backgroundColor;
      return bg !== "" && bg !== "rgba(0, 0, 0, 0)" && bg !== "transparent";
    });
    const icon = (await item.locator(".codicon-warning").count()) > 0;
    return { status: label, text: await item.innerText(), icon, warned };
  });

  await step("fixed", async () => {
    writeFileSync(userConfig, fixedConfig);
    const label = await waitStatus("idle", 60000);
    const icon = (await status().locator(".codicon-warning").count()) > 0;
    return { status: label, text: await status().innerText(), icon };
  });
  log("done");
} finally {
  await context.close();
}
