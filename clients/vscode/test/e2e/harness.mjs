// What every code-server driver in this folder shares: its settings from the environment,
// the browser it drives, one JSON line per step on stdout, and a numbered screenshot per step
// (FAILED-… when it fails) in the artifacts folder. The workbench's own steps (open a file,
// run a command, read the lenses…) are in workbench.mjs.
//
// Env of every driver: BATON_E2E_URL (workbench URL with ?folder=), BATON_E2E_ARTIFACTS
// (screenshot folder), BATON_E2E_PROFILE (fresh browser profile folder), BATON_E2E_CHROMIUM
// (browser binary); each driver names its own others.
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { workbench } from "./workbench.mjs";

/** The environment variable `k`; a driver cannot run without it. */
export const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};

/** The step functions of a driver writing to `artifacts`, on the page `page()` returns. */
export function harness(artifacts, page) {
  const t0 = Date.now();
  let shot = 0;

  function log(step, extra = {}) {
    console.log(JSON.stringify({ step, t: (Date.now() - t0) / 1000, ...extra }));
  }

  async function screenshot(name) {
    shot += 1;
    const path = join(artifacts, `${String(shot).padStart(2, "0")}-${name}.png`);
    await page().screenshot({ path });
    return path;
  }

  async function step(name, fn) {
    try {
      const out = await fn();
      log(name, { screenshot: await screenshot(name), ...(out ?? {}) });
    } catch (err) {
      try {
        await screenshot(`FAILED-${name}`);
      } catch {
        // the page may be gone
      }
      throw new Error(`step "${name}" failed: ${err instanceof Error ? err.message : err}`);
    }
  }

  return { log, screenshot, step };
}

/** Run ``body`` in headless Chromium on the workbench of BATON_E2E_URL: it is given the
 * browser ``context``, the ``page``, ``log`` and ``step``, the first steps ``workbenchIdle``
 * and ``fileOpen``, and the helpers of workbench.mjs.
 * What it returns is logged as the last step, "done"; the browser is closed in any case. */
export async function drive(body, { height = 860 } = {}) {
  const url = env("BATON_E2E_URL");
  const artifacts = env("BATON_E2E_ARTIFACTS");
  mkdirSync(artifacts, { recursive: true });
  const context = await chromium.launchPersistentContext(env("BATON_E2E_PROFILE"), {
    executablePath: process.env.BATON_E2E_CHROMIUM || "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1400, height },
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(20000);
    const { log, step } = harness(artifacts, () => page);
    const wb = workbench(page, url);
    // The steps most drivers begin with: the workbench loaded, its server idle; a file open.
    const workbenchIdle = (timeout = 30000) =>
      step("workbench-idle", async () => {
        await wb.openWorkbench();
        return { status: await wb.waitStatus("idle", timeout) };
      });
    const fileOpen = (file) =>
      step("file-open", async () => {
        await wb.openFile(file);
        await wb.clickEditor();
      });
    const done = await body({ context, page, log, step, workbenchIdle, fileOpen, ...wb });
    log("done", done ?? {});
  } finally {
    await context.close();
  }
}
