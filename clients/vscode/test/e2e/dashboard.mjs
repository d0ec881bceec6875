// "Baton: Open Dashboard" in code-server in headless Chromium: a task is delegated and
// reviewed as a user does it, then the command opens the broker's dashboard page in a webview
// panel, framed from its loopback origin; the page inside shows the task live, with a framed
// session (no cookie, nothing stored), and its CSV export downloads. A screenshot per step.
// Run by tests/e2e/test_vscode_dashboard.py, with code-server opened at 127.0.0.1 (the same
// site as the page) and at localhost (another site, as desktop VS Code's webviews are).
//
// Env: as harness.mjs; BATON_E2E_FILE (the file to select), BATON_E2E_INSTRUCTION;
//      BATON_E2E_BATON (the baton CLI, which delegates a second task while the panel is open)
//      and BATON_E2E_REPO (the folder it works in).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { URL } from "node:url";
import { drive, env } from "./harness.mjs";

const file = env("BATON_E2E_FILE");
const instruction = env("BATON_E2E_INSTRUCTION");
/** The dashboard's own pages, served by the broker on its loopback origin. */
const DASHBOARD = /^http:\/\/127\.0\.0\.1:\d+\/dashboard\//;

await drive(
  async (wb) => {
    const { context, page, step, palette, statusLabel, waitStatus } = wb;
    /** The dashboard's URLs the browser asked for. */
    const reads = [];
    page.on("request", (r) => {
      if (DASHBOARD.test(r.url())) reads.push(r.url());
    });

    /** The dashboard's frame, once the panel has loaded it (nested in the webview's frames). */
    async function dashboardFrame(timeout) {
      const deadline = Date.now() + timeout;
      while (Date.now() < deadline) {
        const found = page.frames().find((f) => DASHBOARD.test(f.url()));
        if (found) return found;
        await page.waitForTimeout(250);
      }
      throw new Error(`no dashboard frame; frames: ${JSON.stringify(page.frames().map((f) => f.url()))}`);
    }

    await wb.workbenchIdle(60000);

    await step("task-delegated", async () => {
      await wb.openFile(file);
      await wb.selectAll();
      await wb.delegate(instruction);
      return { status: await waitStatus("ready for review", 90000) };
    });

    let frame;
    await step("dashboard-opened", async () => {
      await palette("Baton: Open Dashboard");
      await page.locator(".tab", { hasText: "Baton Dashboard" }).waitFor({ timeout: 30000 });
      frame = await dashboardFrame(60000);
      await frame.locator("#live.on").waitFor({ timeout: 60000 });
      await frame.locator("#task-table tbody tr").first().waitFor({ timeout: 60000 });
      await page.waitForTimeout(500); // the charts draw
      const origin = new URL(frame.url()).origin;
      return {
        frameUrl: frame.url(),
        panelOrigin: new URL(frame.parentFrame()?.url() ?? "about:blank").origin,
        // The framed session is in the page's memory only: no cookie of the page's site, no
        // storage, and the element it came in is gone.
        cookies: (await context.cookies(origin)).map((c) => c.name),
        // (a frame of another site may be denied storage altogether: nothing stored either)
        stored: await frame.evaluate(() => {
          try {
            return globalThis.localStorage.length + globalThis.sessionStorage.length;
          } catch (err) {
            return err?.name === "SecurityError" ? "denied" : String(err);
          }
        }),
        sessionInDom: await frame.evaluate(() => document.querySelector('meta[name="baton-session"]') !== null),
        tab: await page.locator(".tab.active").innerText(),
        live: await frame.locator("#live").innerText(),
        summary: await frame.locator("#summary").innerText(),
        lanes: await frame.evaluate(() => [...document.querySelectorAll("svg.timeline g.lane")].map((g) => g.getAttribute("data-worker"))),
        tasks: await frame.evaluate(() =>
          [...document.querySelectorAll("#task-table tbody tr")].map((tr) => ({ id: tr.getAttribute("data-task"), state: tr.querySelector("[data-col=state]")?.textContent ?? "" })),
        ),
        workers: await frame.evaluate(() =>
          [...document.querySelectorAll("#worker-table tbody tr")].map((tr) => ({
            worker: tr.getAttribute("data-worker"),
            input: tr.querySelector("td[data-col=input]")?.getAttribute("data-value"),
            output: tr.querySelector("td[data-col=output]")?.getAttribute("data-value"),
          })),
        ),
      };
    });

    await step("task-picked", async () => {
      await frame.locator("#task-table tbody tr").first().click();
      await frame.locator("#diff .hunk").first().waitFor({ timeout: 30000 });
      return {
        transcript: await frame.locator("#transcript").innerText(),
        hunks: await frame.locator("#diff .hunk").count(),
        buttons: await frame.locator("button.act").count(),
      };
    });
    await step("csv-downloaded", async () => {
      const [download] = await Promise.all([page.waitForEvent("download", { timeout: 30000 }), frame.locator("#csv").click()]);
      const failure = await download.failure();
      if (failure) throw new Error(`the download failed: ${failure}`);
      const lines = readFileSync(await download.path(), "utf8").trim().split(/\r?\n/);
      return { name: download.suggestedFilename(), header: lines[0], rows: lines.slice(1), title: await frame.locator("#csv").getAttribute("title") };
    });
    await step("task-pushed", async () => {
      // A task delegated while the panel is open arrives over the live socket (the page never
      // polls: no snapshot is read again).
      const snapshots = () => reads.filter((r) => r.includes("/dashboard/api/snapshot")).length;
      const before = snapshots();
      const id = execFileSync(env("BATON_E2E_BATON"), ["delegate", "--cwd", env("BATON_E2E_REPO"), "A second task, delegated from the shell"], { encoding: "utf8", timeout: 60000 }).trim();
      await frame.waitForFunction(
        (taskId) => document.querySelector(`#task-table tr[data-task="${taskId}"] [data-col=state]`)?.textContent === "review",
        id,
        { timeout: 90000 },
      );
      return { id, rows: await frame.locator("#task-table tbody tr").count(), snapshotsBefore: before, snapshotsAfter: snapshots() };
    });
    return { status: await statusLabel() };
  },
  { height: 900 },
);
