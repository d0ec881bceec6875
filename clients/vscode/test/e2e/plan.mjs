// "Baton: Plan…" driven in code-server in headless Chromium: the goal typed in its input box, a
// progress notification while the planner works, the proposal opened beside as a document
// that lists every node (worker, prerequisites, scope, instruction) with Approve / Reject in
// its title bar and in a notification; Approve runs the graph and its tasks appear in the
// task view. A screenshot per step. Run by tests/e2e/test_vscode_plan.py.
//
// Env: as harness.mjs; BATON_E2E_GOAL.
import { drive, env } from "./harness.mjs";
import { clean } from "./workbench.mjs";

const goal = env("BATON_E2E_GOAL");

await drive(
  async (wb) => {
    const { page, step, palette, statusLabel, waitFor, toast, toasts, viewRows } = wb;

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

    await wb.workbenchIdle(60000);

    await step("goal-asked", async () => {
      await palette("Baton: Plan…");
      await page.locator(".quick-input-widget .quick-input-title", { hasText: "Baton: Plan" }).waitFor();
      await wb.quickInput().fill(goal);
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
      await toast("run the plan for").locator(".monaco-button", { hasText: "Approve" }).click();
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
    return { status: clean(await statusLabel()) };
  },
  { height: 900 },
);
