// The dashboard page in headless Chromium against a real broker: 20 fake-agent tasks of three
// workers streaming. Opens the one-time URL, watches the live transcript of a streaming task
// grow, waits for every task to settle, then reads the timeline, the per-worker table, the
// diff and the CSV export. One JSON line per step on stdout, a full-page screenshot per step
// (FAILED-… when one fails). Run by tests/e2e/test_dashboard_page.py.
//
// Env: BATON_E2E_URL (the one-time URL), BATON_E2E_ARTIFACTS, BATON_E2E_PROFILE (a fresh
//      Chromium profile folder), BATON_E2E_CHROMIUM, BATON_E2E_STREAMING (the id of the task
//      whose transcript is watched), BATON_E2E_TASKS (how many tasks), BATON_E2E_WORKERS
//      (comma-separated), BATON_E2E_PLAYWRIGHT (the playwright-core package folder).
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const { chromium } = createRequire(import.meta.url)(env("BATON_E2E_PLAYWRIGHT"));
const artifacts = env("BATON_E2E_ARTIFACTS");
const streaming = env("BATON_E2E_STREAMING");
const total = Number(env("BATON_E2E_TASKS"));
const workers = env("BATON_E2E_WORKERS").split(",");
mkdirSync(artifacts, { recursive: true });

const t0 = Date.now();
let shot = 0;
let page;
const log = (step, extra = {}) => console.log(JSON.stringify({ step, t: (Date.now() - t0) / 1000, ...extra }));
async function screenshot(name) {
  shot += 1;
  const path = join(artifacts, `${String(shot).padStart(2, "0")}-${name}.png`);
  await page.screenshot({ path, fullPage: true });
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

const WORKING = ["queued", "preparing", "running", "verifying"];

/** What the page needs, and nothing more: its own scripts, styles and API, its live socket. */
const strictCsp = (origin) =>
  [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self' ${origin.replace("http:", "ws:")}`,
    "base-uri 'none'",
    "form-action 'none'",
  ].join("; ");

/** Per lane of the timeline: its rows and its bars by phase. */
const lanes = () =>
  page.evaluate(() =>
    [...document.querySelectorAll("svg.timeline g.lane")].map((g) => {
      const phases = {};
      for (const r of g.querySelectorAll("rect.bar")) phases[r.dataset.phase] = (phases[r.dataset.phase] ?? 0) + 1;
      return { worker: g.dataset.worker, rows: g.querySelectorAll("g.task-row").length, phases };
    }),
  );

/** The per-worker table: each row's exact numbers (data-value). */
const workerTable = () =>
  page.evaluate(() =>
    [...document.querySelectorAll("#worker-table tbody tr")].map((tr) => {
      const row = { worker: tr.dataset.worker };
      for (const td of tr.querySelectorAll("td[data-col]")) row[td.dataset.col] = td.dataset.value ?? td.textContent;
      return row;
    }),
  );

const taskStates = () =>
  page.evaluate(() => [...document.querySelectorAll("#task-table tbody tr")].map((tr) => [tr.dataset.task, tr.querySelector("[data-col=state]")?.textContent ?? ""]));

const transcript = () => page.evaluate(() => document.getElementById("transcript")?.textContent ?? "");

const context = await chromium.launchPersistentContext(env("BATON_E2E_PROFILE"), {
  executablePath: env("BATON_E2E_CHROMIUM"),
  headless: true,
  viewport: { width: 1400, height: 1000 },
  // LocalNetworkAccessChecks off: Chromium takes a document a route fulfilled for one of no
  // known address, and would refuse its socket to loopback (the strict-CSP reload below).
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-features=LocalNetworkAccessChecks"],
});
const requests = [];
const consoleErrors = [];
try {
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(60000);
  // After the one-time link is spent, the page runs under the strictest policy it needs
  // (strictCsp, stricter than the broker's): each violation is recorded, and a violation is
  // a console error too.
  const origin = new URL(env("BATON_E2E_URL")).origin;
  let routed = 0;
  await context.addInitScript(() => {
    window.__violations = [];
    document.addEventListener("securitypolicyviolation", (e) => window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  page.on("request", (r) => requests.push(new URL(r.url()).pathname));
  page.on("response", (r) => {
    if (r.status() >= 400) consoleErrors.push(`${r.status()} ${new URL(r.url()).pathname}`);
  });
  page.on("console", (m) => {
    if (m.type() === "error") consoleErrors.push(m.text());
  });
  page.on("pageerror", (e) => consoleErrors.push(String(e)));

  await step("page-live", async () => {
    const answer = await page.goto(env("BATON_E2E_URL"));
    await page.locator("#live.on").waitFor();
    // The session is the cookie's now: the page again, at its own address, under strictCsp
    // (a route sees no redirect's target, so not the first load).
    await context.route(/\/dashboard\/(#.*)?$/, async (route) => {
      routed += 1;
      const fetched = await route.fetch();
      await route.fulfill({ response: fetched, headers: { ...fetched.headers(), "content-security-policy": strictCsp(origin) } });
    });
    requests.length = 0;
    await page.goto(`${origin}/dashboard/`);
    await page.locator("#live.on").waitFor();
    await page.waitForFunction((n) => document.querySelectorAll("svg.timeline g.lane").length === n, workers.length);
    return { status: answer?.status(), url: page.url(), lanes: await lanes(), live: await page.locator("#live").textContent() };
  });

  await step("transcript-streaming", async () => {
    await page.locator(`#task-table tr[data-task="${streaming}"]`).click();
    await page.locator("#transcript").waitFor();
    await page.waitForFunction(() => (document.getElementById("transcript")?.textContent ?? "").includes("line 2"), null, { timeout: 90000 });
    const first = await transcript();
    const snapshotsBefore = requests.filter((p) => p.endsWith("/api/snapshot")).length;
    // More lines arrive over the live socket while the task runs.
    await page.waitForFunction((n) => (document.getElementById("transcript")?.textContent ?? "").length > n + 12, first.length, { timeout: 90000 });
    const second = await transcript();
    const state = await page.locator("#task-facts [data-col=state]").textContent();
    const snapshotsAfter = requests.filter((p) => p.endsWith("/api/snapshot")).length;
    return { first, second, state, snapshotsBefore, snapshotsAfter };
  });

  await step("all-settled", async () => {
    await page.waitForFunction(
      ([n, working]) => {
        const rows = [...document.querySelectorAll("#task-table tbody tr")];
        return rows.length === n && rows.every((tr) => !working.includes(tr.querySelector("[data-col=state]")?.textContent ?? ""));
      },
      [total, WORKING],
      { timeout: 300000, polling: 500 },
    );
    await page.waitForTimeout(1500); // the last frames' usage
    return { states: await taskStates(), lanes: await lanes(), workers: await workerTable() };
  });

  await step("diff-shown", async () => {
    await page.locator(`#task-table tr[data-task="${streaming}"]`).click();
    await page.locator("#diff .hunk").first().waitFor();
    const hunks = await page.evaluate(() => [...document.querySelectorAll("#diff .hunk")].map((h) => h.textContent));
    return {
      hunks,
      transcript: await transcript(),
      files: await page.evaluate(() => document.getElementById("files")?.textContent ?? ""),
      checks: await page.evaluate(() => document.getElementById("checks")?.textContent ?? ""),
    };
  });

  await step("csv", async () => {
    const href = await page.locator("#csv").getAttribute("href");
    const csv = await page.evaluate(async (h) => {
      const r = await fetch(h, { credentials: "same-origin" });
      return { status: r.status, type: r.headers.get("content-type"), text: await r.text() };
    }, href);
    return { href, ...csv };
  });

  await step("hunk-accepted", async () => {
    // The broker's actions are on (the test's user config): the page accepts a hunk.
    await page.locator(`#task-table tr[data-task="${streaming}"]`).click();
    const moves = await page.locator("#moves button").allTextContents();
    await page.locator("#diff .hunk button[data-action=accept]").first().click();
    await page.waitForFunction(
      (id) => document.querySelector(`#task-table tr[data-task="${id}"] [data-col=state]`)?.textContent === "applied",
      streaming,
      { timeout: 60000 },
    );
    await page.locator("#act-result", { hasText: "accept: done" }).waitFor();
    return { moves, result: await page.locator("#act-result").textContent(), hunk: await page.locator("#diff .hunk").first().textContent() };
  });

  await step("window-changed", async () => {
    await page.selectOption("#window", "1h");
    await page.waitForFunction(() => location.hash.includes("window=1h"));
    await page.waitForFunction(() => (document.getElementById("csv")?.getAttribute("href") ?? "").endsWith("window=1h"));
    await page.waitForFunction((n) => document.querySelectorAll("#task-table tbody tr").length === n, total);
    return { csv: await page.locator("#csv").getAttribute("href"), lanes: await lanes() };
  });

  const errorsBefore = consoleErrors.length;
  await step("session-gone", async () => {
    // The session gone under an open page (as when its broker ended): the next read is
    // refused (401) and the page says what to do, and stops retrying.
    await context.clearCookies();
    await page.selectOption("#window", "6h");
    await page.locator("#live", { hasText: "no session" }).waitFor();
    return { summary: await page.locator("#summary").textContent() };
  });

  log("done", { requests, consoleErrors: consoleErrors.slice(0, errorsBefore), goneErrors: consoleErrors.slice(errorsBefore), violations: await page.evaluate(() => window.__violations), csp: strictCsp(origin), routed });
} finally {
  await context.close();
}
