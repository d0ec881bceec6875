// The dashboard page framed by another site in headless Chromium, as an editor's webview
// frames it (desktop VS Code's vscode-webview://, code-server at localhost): a page of
// http://localhost:P (another site than the broker's 127.0.0.1) frames the one-time URL with
// &framed=1. The page goes live with a framed session (no cookie; its id in memory, sent as
// X-Baton-Session, never as a Referer), shows the tasks, downloads its CSV, accepts a hunk
// (actions on); the framing page, holding the session id, can use it neither by fetch nor by
// WebSocket, nor read the frame; the same link framed again is refused; the frame reloaded has
// no session. One JSON line per step on stdout, a screenshot per step. Run by
// tests/e2e/test_dashboard_page.py.
//
// Env: BATON_E2E_URL (the one-time URL), BATON_E2E_ARTIFACTS, BATON_E2E_PROFILE,
//      BATON_E2E_CHROMIUM, BATON_E2E_TASKS (how many tasks), BATON_E2E_PLAYWRIGHT.
import { mkdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { join } from "node:path";

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const { chromium } = createRequire(import.meta.url)(env("BATON_E2E_PLAYWRIGHT"));
const artifacts = env("BATON_E2E_ARTIFACTS");
const link = new URL(env("BATON_E2E_URL"));
const total = Number(env("BATON_E2E_TASKS"));
const origin = link.origin;
link.searchParams.set("framed", "1");
mkdirSync(artifacts, { recursive: true });

const t0 = Date.now();
let shot = 0;
let page;
const log = (step, extra = {}) => console.log(JSON.stringify({ step, t: (Date.now() - t0) / 1000, ...extra }));
async function step(name, fn) {
  try {
    const out = await fn();
    shot += 1;
    const path = join(artifacts, `${String(shot).padStart(2, "0")}-${name}.png`);
    await page.screenshot({ path });
    log(name, { screenshot: path, ...(out ?? {}) });
  } catch (err) {
    try {
      await page.screenshot({ path: join(artifacts, `FAILED-${name}.png`) });
    } catch {
      // the page may be gone
    }
    throw new Error(`step "${name}" failed: ${err instanceof Error ? err.message : err}`);
  }
}

// The other site: a page that frames the dashboard as a webview does (same sandbox).
const framer = createServer((req, res) => {
  const src = link.toString();
  res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
  res.end(
    `<!doctype html><html><body style="margin:0"><iframe id="f" src="${src.replace(/&/g, "&amp;")}" ` +
      `sandbox="allow-scripts allow-same-origin allow-downloads" style="border:0;width:100%;height:96vh"></iframe></body></html>`,
  );
});
await new Promise((done) => framer.listen(0, "127.0.0.1", done));
const framerUrl = `http://localhost:${framer.address().port}/`;

const context = await chromium.launchPersistentContext(env("BATON_E2E_PROFILE"), {
  executablePath: env("BATON_E2E_CHROMIUM"),
  headless: true,
  acceptDownloads: true,
  viewport: { width: 1400, height: 1000 },
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});

/** What the framed page's own requests carried (the frame's navigation aside). */
const sent = [];
const dashboardFrame = () => page.frames().find((f) => f !== page.mainFrame() && f.url().startsWith(`${origin}/dashboard/`));

try {
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(30000);
  page.on("request", (r) => {
    // The framed page's own (not the framing page's tries below, nor the frame's navigation).
    if (!r.url().startsWith(origin) || r.isNavigationRequest() || r.frame() === page.mainFrame()) return;
    const h = r.headers();
    sent.push({ path: new URL(r.url()).pathname, session: h["x-baton-session"] ?? null, cookie: h.cookie ?? null, referer: h.referer ?? null });
  });

  let frame;
  await step("framed-live", async () => {
    await page.goto(framerUrl);
    const deadline = Date.now() + 30000;
    while (!(frame = dashboardFrame()) && Date.now() < deadline) await page.waitForTimeout(100);
    if (!frame) throw new Error(`no dashboard frame: ${page.frames().map((f) => f.url())}`);
    await frame.locator("#live.on").waitFor({ timeout: 60000 });
    await frame.waitForFunction((n) => document.querySelectorAll("#task-table tbody tr").length === n, total);
    return {
      frameUrl: frame.url(),
      live: await frame.locator("#live").innerText(),
      rows: await frame.locator("#task-table tbody tr").count(),
      cookies: (await context.cookies(origin)).map((c) => c.name),
      sessionInDom: await frame.evaluate(() => document.querySelector('meta[name="baton-session"]') !== null),
    };
  });

  await step("csv-framed", async () => {
    const [download] = await Promise.all([page.waitForEvent("download"), frame.locator("#csv").click()]);
    const failure = await download.failure();
    if (failure) throw new Error(`the download failed: ${failure}`);
    return { name: download.suggestedFilename(), text: readFileSync(await download.path(), "utf8") };
  });

  await step("hunk-accepted-framed", async () => {
    const id = await frame.locator("#task-table tbody tr").first().getAttribute("data-task");
    await frame.locator(`#task-table tr[data-task="${id}"]`).click();
    await frame.locator("#diff .hunk button[data-action=accept]").first().click();
    await frame.locator("#act-result", { hasText: "accept: done" }).waitFor({ timeout: 60000 });
    return { id, result: await frame.locator("#act-result").textContent() };
  });

  await step("other-origin-refused", async () => {
    const session = sent.find((s) => s.session !== null)?.session;
    if (!session) throw new Error("the framed page sent no session header");
    // The framing page (another origin) holds the id, and tries everything a script can.
    const tried = await page.evaluate(
      async ([base, sid]) => {
        const out = {};
        try {
          const r = await fetch(`${base}/dashboard/api/snapshot`, { headers: { "X-Baton-Session": sid } });
          out.fetch = `answered ${r.status}`;
        } catch (err) {
          out.fetch = `failed: ${err}`;
        }
        try {
          const r = await fetch(`${base}/dashboard/api/snapshot`, { mode: "no-cors" });
          out.noCors = r.type;
        } catch (err) {
          out.noCors = `failed: ${err}`;
        }
        out.socket = await new Promise((done) => {
          const ws = new window.WebSocket(`${base.replace("http:", "ws:")}/dashboard/live`, ["baton.dashboard", `baton.session.${sid}`]);
          ws.onopen = () => done("opened");
          ws.onerror = () => done("refused");
        });
        const f = document.getElementById("f");
        out.contentDocument = f.contentDocument === null ? null : "readable";
        try {
          out.location = f.contentWindow.location.href;
        } catch (err) {
          out.location = err.name;
        }
        return out;
      },
      [origin, session],
    );
    return { ...tried, sessionLength: session.length };
  });

  await step("replayed-link-refused", async () => {
    // The same link framed again: spent by the first frame's load.
    await page.evaluate(() => {
      const again = document.createElement("iframe");
      again.id = "again";
      again.src = document.getElementById("f").src;
      document.body.append(again);
    });
    let again;
    const deadline = Date.now() + 20000;
    while (Date.now() < deadline) {
      again = page.frames().find((f) => f !== frame && f.url().includes("framed=1"));
      if (again && (await again.evaluate(() => document.readyState)) === "complete") break;
      await page.waitForTimeout(100);
    }
    return { text: again ? await again.evaluate(() => document.body.innerText) : null };
  });

  await step("reloaded-has-no-session", async () => {
    // Opened again at its address (as a reload does): it has nothing to send but the address.
    const answer = await frame.goto(frame.url().split("#")[0]);
    return { url: frame.url(), status: answer?.status(), text: await frame.evaluate(() => document.body.innerText) };
  });

  log("done", { sent });
} finally {
  await context.close();
  framer.close();
}
