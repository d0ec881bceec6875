/** A planner's proposal (`baton/plan`), read and shown as Markdown (pure). The server sends it
 * when a planner started with `baton.plan` stops: its nodes and every problem with them
 * (`proposed`), the question it asks (`asks`), or why it ended without a plan (`failed`). */

export const NOTIFY_PLAN = "baton/plan";

export interface PlanNode {
  key: string;
  title: string;
  instruction: string;
  worker: string | null;
  after: string[];
  /** Globs the node may write; null: anywhere. */
  scope: string[] | null;
  kind: string | null;
}

export interface PlanProposal {
  taskId: string;
  goal: string;
  state: "proposed" | "asks" | "failed";
  nodes: PlanNode[];
  problems: string[];
  question?: string;
  message?: string;
}

function obj(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error(`${what} is not an object`);
  return value as Record<string, unknown>;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

export function readPlanNode(value: unknown): PlanNode {
  const o = obj(value, "a plan node");
  return {
    key: text(o.key),
    title: text(o.title) || text(o.instruction),
    instruction: text(o.instruction),
    worker: typeof o.worker === "string" ? o.worker : null,
    after: strings(o.after),
    scope: Array.isArray(o.scope) ? strings(o.scope) : null,
    kind: typeof o.kind === "string" ? o.kind : null,
  };
}

export function readPlan(value: unknown): PlanProposal {
  const o = obj(value, "baton/plan");
  if (typeof o.taskId !== "string") throw new Error("baton/plan has no taskId");
  const state = o.state === "asks" || o.state === "failed" ? o.state : "proposed";
  const out: PlanProposal = {
    taskId: o.taskId,
    goal: text(o.goal),
    state,
    nodes: Array.isArray(o.nodes) ? o.nodes.map(readPlanNode) : [],
    problems: strings(o.problems),
  };
  if (typeof o.question === "string") out.question = o.question;
  if (typeof o.message === "string") out.message = o.message;
  return out;
}

/** Whether the plan may be approved: it has nodes and nothing wrong with them. */
export function approvable(plan: PlanProposal): boolean {
  return plan.state === "proposed" && plan.nodes.length > 0 && plan.problems.length === 0;
}

/** The nodes in an order they can run in (each after what it comes after), then any left
 * (a cycle: its problem says so). */
export function ordered(nodes: readonly PlanNode[]): PlanNode[] {
  const out: PlanNode[] = [];
  const placed = new Set<string>();
  let left = [...nodes];
  while (left.length > 0) {
    const ready = left.filter((n) => n.after.every((k) => placed.has(k) || !nodes.some((m) => m.key === k)));
    if (ready.length === 0) break;
    for (const n of ready) {
      out.push(n);
      placed.add(n.key);
    }
    left = left.filter((n) => !placed.has(n.key));
  }
  return [...out, ...left];
}

function quoteLines(body: string): string {
  return body
    .trim()
    .split("\n")
    .map((l) => `> ${l}`)
    .join("\n");
}

/** The proposal as a Markdown document: the goal, the problems, then every node with its
 * worker, what it comes after, where it may write and its whole instruction. */
export function planMarkdown(plan: PlanProposal): string {
  const lines: string[] = [`# Plan: ${plan.goal || plan.taskId}`, ""];
  if (plan.state === "asks") {
    lines.push(`The planner asks: **${plan.question ?? ""}**`, "", "Reply to it (Baton: Reply…) and it plans again.", "");
    return lines.join("\n");
  }
  if (plan.state === "failed") {
    lines.push(`The planner ended without a plan: ${plan.message || "no reason given"}.`, "");
    return lines.join("\n");
  }
  const n = plan.nodes.length;
  if (plan.problems.length > 0) {
    lines.push(`**This plan cannot run** (${plan.problems.length} problem${plan.problems.length === 1 ? "" : "s"}):`, "");
    for (const p of plan.problems) lines.push(`- ⚠ ${p}`);
    lines.push("", "Reject it and plan again.", "");
  } else {
    lines.push(`${n} task${n === 1 ? "" : "s"}, checked: approve to run them as a graph (Baton: Approve Plan), or reject.`, "");
  }
  for (const node of ordered(plan.nodes)) {
    lines.push(`## ${node.key}: ${node.title}`, "");
    const facts = [
      `- **worker:** ${node.worker ?? "the project's default"}${node.kind ? ` (${node.kind})` : ""}`,
      `- **after:** ${node.after.length > 0 ? node.after.join(", ") : "nothing (starts at once)"}`,
      `- **scope:** ${node.scope === null ? "anywhere" : node.scope.map((s) => `\`${s}\``).join(", ")}`,
    ];
    lines.push(...facts, "", quoteLines(node.instruction || "(no instruction)"), "");
  }
  lines.push(`Planner task: ${plan.taskId}`, "");
  return lines.join("\n");
}
