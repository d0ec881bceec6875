/**
 * "Baton: Plan…": a worker proposes a task graph for a goal (the server's `baton.plan`), the
 * user reads it and approves or rejects it. A progress notification runs while the planner
 * works; its proposal (`baton/plan`) opens beside the editor as a read-only Markdown document
 * (`baton-plan:`) listing every node with its worker, what it comes after, its scope and its
 * whole instruction, problems first. Approve (the notification's button, the document's title
 * bar, or "Baton: Approve Plan") runs it as a graph — refused while the plan has problems —
 * and its tasks appear in the task view as any tasks do. A question the planner asks comes as
 * any task's question does (Reply…); the planner then plans again.
 */

import * as vscode from "vscode";

import { PLAN_SCHEME } from "./constants";
import { traceError, traceInfo } from "./log";
import { PlanProposal, approvable, planMarkdown } from "./plan";
import { showErrorMessage, showInformationMessage, showInputBox, showQuickPick, showWarningMessage } from "./vscodeapi";

export const ServerPlan = { plan: "baton.plan", approve: "baton.planApprove", reject: "baton.planReject" } as const;

export const APPROVE = "Approve";
export const REJECT = "Reject";
export const SHOW_PLAN = "Show Plan";

type Request = (command: string, args: object) => Promise<unknown>;

/** The document of a planner's proposal; its tab says "Plan: <goal>". */
export function planUri(taskId: string, goal: string): vscode.Uri {
  const label = goal.replace(/[\\/:*?"<>|\s]+/g, " ").trim().slice(0, 60) || taskId;
  return vscode.Uri.from({ scheme: PLAN_SCHEME, path: `/${taskId}/Plan: ${label}.md` });
}

export function taskOfPlan(uri: vscode.Uri): string | undefined {
  if (uri.scheme !== PLAN_SCHEME) return undefined;
  return uri.path.split("/")[1] || undefined;
}

/** The planner a command names: `{taskId}`, a plan document's uri, or nothing. */
function taskIdOfArg(arg: unknown): string | undefined {
  if (arg instanceof vscode.Uri) return taskOfPlan(arg);
  if (typeof arg === "object" && arg !== null && typeof (arg as { taskId?: unknown }).taskId === "string") {
    return (arg as { taskId: string }).taskId;
  }
  return undefined;
}

export class PlanView implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  /** The latest proposal of each planner this window started, until approved or rejected. */
  private readonly plans = new Map<string, PlanProposal>();
  private readonly goals = new Map<string, string>();
  /** Proposals decided in this window, with what became of them (their documents say it). */
  private readonly decided = new Map<string, { plan: PlanProposal; note: string }>();
  /** Ends the progress of a planner at work. */
  private readonly working = new Map<string, () => void>();
  /** Planners asking a question: their progress starts again once they work again. */
  private readonly replied = new Map<string, () => void>();

  constructor(
    private readonly request: Request,
    private readonly tasksChanged: () => Promise<void>,
  ) {}

  provideTextDocumentContent(uri: vscode.Uri): string {
    const taskId = taskOfPlan(uri);
    if (taskId === undefined) return "";
    const plan = this.plans.get(taskId);
    if (plan !== undefined) return planMarkdown(plan);
    const done = this.decided.get(taskId);
    return done === undefined ? "This plan is gone (the server restarted).\n" : `> **${done.note}**\n\n${planMarkdown(done.plan)}`;
  }

  /** Ask for the goal (unless given), start the planner, show a progress until it stops. */
  async start(arg: unknown): Promise<void> {
    const given = typeof arg === "object" && arg !== null ? (arg as { goal?: unknown; worker?: unknown }) : {};
    const goal =
      typeof given.goal === "string"
        ? given.goal
        : await showInputBox({
            title: "Baton: Plan",
            prompt: "A worker proposes a graph of tasks for this goal; you approve it before anything runs",
            placeHolder: "Add a settings page with its tests",
            ignoreFocusOut: true,
          });
    if (goal === undefined || goal.trim() === "") return;
    const args: Record<string, string> = { goal };
    if (typeof given.worker === "string") args.worker = given.worker;
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    if (folder !== undefined) args.uri = folder.toString();
    const result = (await this.request(ServerPlan.plan, args)) as { taskId?: unknown };
    if (typeof result.taskId !== "string") throw new Error("baton.plan answered no task");
    const taskId = result.taskId;
    this.goals.set(taskId, goal);
    traceInfo(`planning "${goal}" (task ${taskId})`);
    this.progress(taskId, goal);
  }

  private progress(taskId: string, goal: string): void {
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Baton: planning "${goal}"…`, cancellable: true },
      (_, token) =>
        new Promise<void>((resolve) => {
          this.working.set(taskId, resolve);
          token.onCancellationRequested(() => {
            this.working.delete(taskId);
            resolve();
            void this.reject({ taskId }).catch((err) => traceError("cancelling the planner:", err));
          });
        }),
    );
  }

  /** `baton/plan`: a planner stopped. */
  onPlan(plan: PlanProposal): void {
    const goal = plan.goal || this.goals.get(plan.taskId) || plan.taskId;
    if (!this.goals.has(plan.taskId) && !this.working.has(plan.taskId) && !this.plans.has(plan.taskId)) {
      this.goals.set(plan.taskId, goal); // started elsewhere with this window's server
    }
    this.working.get(plan.taskId)?.();
    this.working.delete(plan.taskId);
    this.plans.set(plan.taskId, plan);
    const uri = planUri(plan.taskId, goal);
    this.changed.fire(uri);
    if (plan.state === "asks") {
      // The question comes as the planner task's (Reply…); a reply sets it planning again.
      traceInfo(`the planner ${plan.taskId} asks: ${plan.question ?? ""}`);
      this.whenReplied(plan.taskId, goal);
      return;
    }
    if (plan.state === "failed") {
      this.plans.delete(plan.taskId);
      void showErrorMessage(`Baton: the planner of "${goal}" ended without a plan: ${plan.message || "no reason given"}`);
      return;
    }
    void this.show(plan.taskId).then(() => this.offer(plan, goal));
  }

  /** After a reply to the planner's question, the progress runs again until it stops. */
  private whenReplied(taskId: string, goal: string): void {
    this.replied.set(taskId, () => this.progress(taskId, goal));
  }

  /** A task changed state: a planner that was asking and runs again gets its progress back. */
  taskState(taskId: string, state: string): void {
    if (state === "needs_input") return;
    const again = this.replied.get(taskId);
    if (again === undefined) return;
    this.replied.delete(taskId);
    if (["queued", "preparing", "running"].includes(state)) again();
  }

  private async offer(plan: PlanProposal, goal: string): Promise<void> {
    const n = plan.nodes.length;
    if (!approvable(plan)) {
      const first = plan.problems[0] ?? "it has no tasks";
      const more = plan.problems.length > 1 ? ` (and ${plan.problems.length - 1} more)` : "";
      const pick = await showWarningMessage(`Baton: the plan for "${goal}" cannot run: ${first}${more}`, REJECT, SHOW_PLAN);
      if (pick === REJECT) await this.reject({ taskId: plan.taskId });
      else if (pick === SHOW_PLAN) await this.show(plan.taskId);
      return;
    }
    const pick = await showInformationMessage(`Baton: run the plan for "${goal}" (${n} task${n === 1 ? "" : "s"})?`, APPROVE, REJECT);
    if (pick === APPROVE) await this.approve({ taskId: plan.taskId });
    else if (pick === REJECT) await this.reject({ taskId: plan.taskId });
  }

  /** Open a proposal beside the editor, focus kept where it was. */
  async show(taskId: string): Promise<void> {
    const uri = planUri(taskId, this.goals.get(taskId) ?? this.plans.get(taskId)?.goal ?? taskId);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: true, preserveFocus: true, viewColumn: vscode.ViewColumn.Beside });
  }

  /** The proposal a command means: the one named, else the only (or a picked) one waiting. */
  private async pick(arg: unknown, verb: string): Promise<PlanProposal | undefined> {
    const named = taskIdOfArg(Array.isArray(arg) ? arg[0] : arg) ?? taskIdOfArg(vscode.window.activeTextEditor?.document.uri);
    if (named !== undefined) {
      const plan = this.plans.get(named);
      if (plan === undefined) void showInformationMessage("Baton: that plan was approved, rejected or is gone.");
      return plan;
    }
    const waiting = [...this.plans.values()];
    if (waiting.length === 0) {
      void showInformationMessage("Baton: no plan is waiting (Baton: Plan… proposes one).");
      return undefined;
    }
    if (waiting.length === 1) return waiting[0];
    const items = waiting.map((p) => ({ label: p.goal || p.taskId, description: `${p.nodes.length} tasks · ${p.taskId}`, plan: p }));
    return (await showQuickPick(items, { title: `Baton: ${verb} which plan?` }))?.plan;
  }

  async approve(arg: unknown): Promise<void> {
    const plan = await this.pick(arg, "approve");
    if (plan === undefined) return;
    if (!approvable(plan)) {
      void showErrorMessage(`Baton: this plan cannot run: ${plan.problems.join("; ") || "it has no tasks"}. Reject it and plan again.`);
      return;
    }
    const result = (await this.request(ServerPlan.approve, { taskId: plan.taskId })) as { tasks?: Record<string, string> };
    const ids = result.tasks ?? {};
    const listed = Object.entries(ids).map(([k, id]) => `${k} ${id}`).join(", ");
    this.forget(plan.taskId, `Approved: its tasks run (${listed}).`);
    const n = Object.keys(ids).length;
    traceInfo(`plan ${plan.taskId} approved: ${listed}`);
    void showInformationMessage(`Baton: the plan runs: ${n} task${n === 1 ? "" : "s"} started (see the task view).`);
    await this.tasksChanged().catch(() => undefined);
  }

  async reject(arg: unknown): Promise<void> {
    const taskId = taskIdOfArg(Array.isArray(arg) ? arg[0] : arg) ?? (await this.pick(arg, "reject"))?.taskId;
    if (taskId === undefined) return;
    await this.request(ServerPlan.reject, { taskId });
    this.forget(taskId, "Rejected: nothing of it runs.");
    traceInfo(`plan ${taskId} rejected`);
  }

  private forget(taskId: string, note: string): void {
    const goal = this.goals.get(taskId) ?? this.plans.get(taskId)?.goal ?? taskId;
    const plan = this.plans.get(taskId);
    if (plan !== undefined) this.decided.set(taskId, { plan, note });
    this.plans.delete(taskId);
    this.replied.delete(taskId);
    this.working.get(taskId)?.();
    this.working.delete(taskId);
    this.changed.fire(planUri(taskId, goal));
  }

  dispose(): void {
    for (const end of this.working.values()) end();
    this.working.clear();
    this.changed.dispose();
  }
}
