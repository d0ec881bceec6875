// What every code-server driver in this folder shares: its settings from the environment,
// one JSON line per step on stdout, and a numbered screenshot per step (FAILED-… when it
// fails) in the artifacts folder.
import { join } from "node:path";

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
