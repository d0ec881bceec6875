// Agents unsandboxed (sandbox = "off" in the user's Baton config), driven in code-server in
// headless Chromium: the status bar item says so plainly, with why and how to fix it in its
// tooltip; once the config is fixed (rewritten here, as the user would) it goes back to idle
// without a reload. A screenshot per step. Run by tests/e2e/test_vscode.py
// (test_status_bar_says_agents_run_unsandboxed).
//
// Env: as harness.mjs; BATON_E2E_USER_CONFIG (Baton's user config file),
//      BATON_E2E_FIXED_CONFIG (its text without sandbox = "off").
import { writeFileSync } from "node:fs";
import { drive, env } from "./harness.mjs";

const userConfig = env("BATON_E2E_USER_CONFIG");
const fixedConfig = env("BATON_E2E_FIXED_CONFIG");

await drive(async ({ step, openWorkbench, status, waitStatus }) => {
  await step("unsandboxed", async () => {
    await openWorkbench();
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
});
