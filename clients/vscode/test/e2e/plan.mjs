// "Baton: Plan…" driven in code-server in headless Chromium: the goal typed in its input box, a
// progress notification while the planner works, the proposal opened beside as a document
// that lists every node (worker, prerequisites, scope, instruction) with Approve / Reject in
// its title bar and in a notification; Approve runs the graph and its tasks appear in the
// task view. A screenshot per step. Run by tests/e2e/test_vscode_plan.py.
//
// Env: BATON_E2E_URL, _ARTIFACTS, _PROFILE, _CHROMIUM as drive.mjs; BATON_E2E_GOAL.
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import { env, harness } from "./harness.mjs";

const url = env("BATON_E2E_URL");
const artifacts = env("BATON_E2E_ARTIFACTS");
const goal = env("BATON_E2E_GOAL");
mkdirSync(artifacts, { recursive: true });

let page;
const { log, step } = harness(artifacts, () => page);

const STATUS_ID = "baton.baton.baton.status";
const clean = (s) => (s ?? "").replace(/\u00a0/g, " ").trim();
const statusLabel = () => page.evaluate((id) => document.getElementById(id)?.getAttribute("aria-label") ?? "", STATUS_ID);

async function waitFor(read, pred, what, timeout = 30000) {
  const deadline = Date.now() + timeout;
  let v;
  while (Date.now() < deadline) {
    v = await read();
    if (pred(v)) return v;
    await page.waitForTimeout(100);
  }
  throw new Error(`never saw ${what}; saw: ${JSON.stringify(v)}`);
}

async function palette(command) {
  await page.keyboard.press("Control+Shift+P");
  const input = page.locator(".quick-input-widget input.input");
  await input.waitFor({ state: "visible" });
  await input.fill(`>${command}`);
  const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: command }).first();
  await row.waitFor({ timeout: 10000 });
  await row.click();
}

const toasts = () => page.evaluate(() => [...document.querySelectorAll(".notifications-toasts .notification-list-item")].map((e) => (e.innerText ?? "").replace(/\u00a0/g, " ")));

/** The text of the plan's document, as its editor draws it (every line: it is short). */
const planText = () =>
  page.evaluate(() => {
    const editor = [...document.querySelectorAll(".editor-group-container")].find((g) => g.querySelector('.tab.active[aria-label*="Plan: "]'));
    const lines = [...(editor?.querySelectorAll(".view-lines .view-line") ?? [])];
    return lines
      .map((l) => ({ top: parseFloat(l.style.top || "0"), text: (l.textContent ?? "").replace(/\u00a0/g, " ") }))
      .sort((a, b) => a.top - b.top)
      .map((l) => l.text)
      .join("\n");
  });

const titleActions = () =>
  page.evaluate(() => {
    const group = [...document.querySelectorAll(".editor-group-container")].find((g) => g.querySelector('.tab.active[aria-label*="Plan: "]'));
    return [...(group?.querySelectorAll(".editor-actions .action-label") ?? [])].map((e) => e.getAttribute("aria-label") ?? "");
  });

const viewRows = () =>
  page.evaluate(() =>
    [...document.querySelectorAll(".pane-body .monaco-list-row")]
      .filter((r) => r.closest('[id*="baton.tasks"]') ?? r.closest(".pane")?.querySelector('.pane-header[aria-label*="Tasks"]'))
      .map((r) => (r.getAttribute("aria-label") ?? "").replace(/\u00a0/g, " ")),
  );

const context = await chromium.launchPersistentContext(env("BATON_E2E_PROFILE"), {
  executablePath: process.env.BATON_E2E_CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1400, height: 900 },
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});

try {
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(20000);

  await step("workbench-idle", async () => {
    await page.goto(url);
    await page.locator(".monaco-workbench").waitFor({ timeout: 30000 });
    await waitFor(statusLabel, (s) => s.includes("idle"), "the server idle", 60000);
  });

  await step("goal-asked", async () => {
    await palette("Baton: Plan…");
    await page.locator(".quick-input-widget .quick-input-title", { hasText: "Baton: Plan" }).waitFor();
    await page.locator(".quick-input-widget input.input").fill(goal);
  });

  await step("planning", async () => {
    await page.keyboard.press("Enter");
    const shown = await waitFor(toasts, (t) => t.some((x) => x.includes(`planning "${goal}"`)), "the planning progress");
    return { toasts: shown };
  });

  await step("plan-shown", async () => {
    await page.locator('.tab[aria-label*="Plan: "]').first().waitFor({ timeout: 60000 });
    const text = await waitFor(planText, (t) => t.includes("## join"), "the plan's nodes drawn");
    const offer = await waitFor(toasts, (t) => t.some((x) => x.includes("run the plan for")), "the Approve / Reject offer");
    const progressGone = !(await toasts()).some((x) => x.includes(`planning "${goal}"`));
    // Its title bar has Approve / Reject once its group is the active one (the user reads it).
    await page.locator('.tab[aria-label*="Plan: "]').first().click();
    const actions = await waitFor(titleActions, (a) => a.some((x) => x.startsWith("Approve Plan")), "Approve Plan in the title bar");
    return { text, offer, actions, progressGone };
  });

  await step("approved", async () => {
    const toast = page.locator(".notifications-toasts .notification-list-item", { hasText: "run the plan for" });
    await toast.locator(".monaco-button", { hasText: "Approve" }).click();
    const said = await waitFor(toasts, (t) => t.some((x) => x.includes("the plan runs")), "the plan running");
    return { toasts: said };
  });

  await step("tasks-in-view", async () => {
    await palette("Baton: Focus on Tasks View");
    const rows = await waitFor(
      viewRows,
      (r) => ["Create left/a.txt", "Create right/b.txt", "Write join.txt"].every((t) => r.some((x) => x.includes(t))),
      "the graph's tasks in the task view",
      60000,
    );
    const status = await waitFor(statusLabel, (s) => s.includes("2 ready for review"), "left and right ready for review", 60000);
    return { rows, status: clean(status) };
  });
  log("done", { status: clean(await statusLabel()) });
} finally {
  await context.close();
}
