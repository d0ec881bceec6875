/** The tasks the server told us about, grouped as the task view and the quick pick show them,
 * and the notifications a state change deserves (pure). A task another tool proposed
 * (`proposedBy`, e.g. Claude Code in a terminal) is named as its proposal, and offers only
 * the moves its `next` lists (no reply, no retry). */

import { TaskSummary, TaskUsage, WORKING_STATES } from "./protocol";

export type Group = "needs input" | "running" | "review" | "failed" | "done";

export const GROUP_ORDER: readonly Group[] = ["needs input", "running", "review", "failed", "done"];

export function groupOf(state: string): Group {
  if (state === "needs_input") return "needs input";
  if (WORKING_STATES.has(state)) return "running";
  if (state === "review") return "review";
  if (state === "failed" || state === "interrupted") return "failed";
  return "done";
}

/** Display names of the tools whose proposals arrive as tasks. */
const PROPOSERS: Record<string, string> = { "claude-code": "Claude Code" };

/** Who proposed the task ("Claude Code"), or undefined for Baton's own tasks. */
export function proposerOf(task: TaskSummary): string | undefined {
  if (!task.proposedBy) return undefined;
  return PROPOSERS[task.proposedBy] ?? task.proposedBy;
}

/** The title to show: "Claude Code proposes: edit app.py" for a proposal whose title is
 * "Claude Code: edit app.py", else the title (or the id). */
export function titleOf(task: TaskSummary): string {
  const title = task.title || task.id;
  const by = proposerOf(task);
  if (by === undefined) return title;
  return `${by} proposes: ${title.startsWith(`${by}: `) ? title.slice(by.length + 2) : title}`;
}

/** Whether the task offers a move (its `next`; a summary without one offers the usual). */
function offers(task: TaskSummary, move: string, usual: boolean): boolean {
  if (task.proposedBy) return task.next.includes(move);
  return task.next.length > 0 ? task.next.includes(move) : usual;
}

export function canReply(task: TaskSummary): boolean {
  return offers(task, "reply", task.state === "needs_input");
}

export function canRetry(task: TaskSummary): boolean {
  return offers(task, "retry", ["failed", "interrupted", "cancelled"].includes(task.state));
}

/** contextValue of a task's tree item for `viewItem =~` menus: `task <state>`, then
 * ` working` while its agent works, ` proposal` for a proposal (no reply, no retry). */
export function contextValue(task: TaskSummary): string {
  const working = WORKING_STATES.has(task.state) ? " working" : "";
  const proposal = task.proposedBy ? " proposal" : "";
  return `task ${task.state}${working}${proposal}`;
}

const ICONS: Record<Group, string> = {
  "needs input": "question",
  running: "sync~spin",
  review: "diff",
  failed: "error",
  done: "pass",
};

export function iconOf(state: string): string {
  if (state === "cancelled" || state === "rejected") return "circle-slash";
  if (state === "answered") return "comment";
  return ICONS[groupOf(state)];
}

export function describe(task: TaskSummary): string {
  const by = proposerOf(task);
  const who = by !== undefined ? `proposed by ${by}` : [task.worker, task.model].filter(Boolean).join(" · ");
  const state = task.state.replace(/_/g, " ");
  return [state, who, spentText(task.usage), task.message].filter(Boolean).join(" — ");
}

function tokensText(n: number): string {
  if (n >= 1_000_000) return `${(n / 1_000_000).toFixed(1)}M`;
  return n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n);
}

/** "1.6k tokens · ~$0.0040" (`~`: an estimate), "" when the task used nothing yet. */
export function spentText(usage: TaskUsage | undefined): string {
  if (!usage) return "";
  const tokens = usage.input + usage.cached + usage.output;
  if (!tokens && usage.cost === null) return "";
  const parts = [`${tokensText(tokens)} tokens`];
  if (usage.cost !== null) parts.push(`${usage.costSource === "estimated" ? "~" : ""}$${usage.cost.toFixed(4)}`);
  return parts.join(" · ");
}

/** The tooltip's line: "Tokens: 1000 in, 500 cached, 100 out (40 reasoning) · $0.0040
 * (estimated)"; "" when the task used nothing yet. */
export function usageLine(usage: TaskUsage | undefined): string {
  if (!spentText(usage)) return "";
  const u = usage!;
  const reasoning = u.reasoning ? ` (${u.reasoning} reasoning)` : "";
  const cost = u.cost === null ? "" : ` · $${u.cost.toFixed(4)} (${u.costSource ?? "reported"})`;
  return `Tokens: ${u.input} in, ${u.cached} cached, ${u.output} out${reasoning}${cost}`;
}

/** A notification to show after a task changed state. */
export interface Notice {
  kind: "needsInput" | "review" | "failed";
  taskId: string;
  message: string;
  actions: string[];
}

export const REPLY = "Reply";
export const REVIEW = "Review";
export const ACCEPT_ALL = "Accept All";
export const SHOW = "Show";

export class TaskList {
  private readonly byId = new Map<string, TaskSummary>();

  /** Take tasks from `baton/tasks`; returns the notices their new states call for. */
  update(tasks: readonly TaskSummary[]): Notice[] {
    const notices: Notice[] = [];
    for (const t of tasks) {
      const old = this.byId.get(t.id);
      if (old && old.updatedAt > t.updatedAt) continue; // an older summary arrived late
      this.byId.set(t.id, t);
      if (old?.state === t.state) continue;
      const title = t.title || t.id;
      const by = proposerOf(t);
      if (by !== undefined && t.state === "review") {
        // A proposal arrives in review (and is withdrawn when its proposer goes away).
        notices.push({ kind: "review", taskId: t.id, message: `Baton: ${titleOf(t)} — decide its hunks; ${by} writes what you accept.`, actions: [REVIEW, ACCEPT_ALL] });
      } else if (t.state === "needs_input") {
        const actions = canReply(t) ? [REPLY, SHOW] : [SHOW];
        notices.push({ kind: "needsInput", taskId: t.id, message: `Baton: "${title}" needs input: ${t.message || "the agent asked a question"}`, actions });
      } else if (t.state === "review" && old !== undefined) {
        notices.push({ kind: "review", taskId: t.id, message: `Baton: "${title}" is ready for review.`, actions: [REVIEW, ACCEPT_ALL] });
      } else if (t.state === "failed" && old !== undefined) {
        notices.push({ kind: "failed", taskId: t.id, message: `Baton: "${title}" failed: ${t.message}`, actions: [SHOW] });
      }
    }
    return notices;
  }

  /** Replace everything with a full listing (from `baton.tasks`). */
  reset(tasks: readonly TaskSummary[]): void {
    this.byId.clear();
    for (const t of tasks) this.byId.set(t.id, t);
  }

  get(id: string): TaskSummary | undefined {
    return this.byId.get(id);
  }

  all(): TaskSummary[] {
    return [...this.byId.values()].sort((a, b) => b.updatedAt - a.updatedAt);
  }

  grouped(): Map<Group, TaskSummary[]> {
    const out = new Map<Group, TaskSummary[]>();
    for (const g of GROUP_ORDER) out.set(g, []);
    for (const t of this.all()) out.get(groupOf(t.state))!.push(t);
    return out;
  }

  /** Tasks in one of ``states``, newest first. */
  inStates(...states: string[]): TaskSummary[] {
    return this.all().filter((t) => states.includes(t.state));
  }
}

/** The task id a command was given: `{taskId}`, a task summary, or a tree node. */
export function taskIdOf(arg: unknown): string | undefined {
  if (typeof arg !== "object" || arg === null) return undefined;
  const o = arg as Record<string, unknown>;
  if (typeof o.taskId === "string") return o.taskId;
  if (typeof o.task === "object" && o.task !== null) return taskIdOf({ taskId: (o.task as { id?: unknown }).id });
  if (typeof o.id === "string" && typeof o.state === "string") return o.id;
  return undefined;
}
