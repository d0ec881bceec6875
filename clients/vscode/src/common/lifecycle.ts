/**
 * The lines the "Baton" log gets for each task's life, at info level (pure): delegated,
 * each state it moves to (started, needs input, ready for review, settled…), accepts and
 * rejects with their conflicts, cancels.
 */

import { TaskSummary } from "./protocol";

const SETTLED = new Set(["applied", "rejected", "answered", "failed", "cancelled", "interrupted"]);

function name(id: string, title?: string): string {
  return title ? `task ${id} "${title}"` : `task ${id}`;
}

/** A task was delegated (the answer of `baton.delegate`). */
export function delegatedLine(result: unknown, worker?: string | null): string | undefined {
  if (typeof result !== "object" || result === null) return undefined;
  const r = result as { taskId?: unknown; title?: unknown; state?: unknown };
  if (typeof r.taskId !== "string") return undefined;
  const title = typeof r.title === "string" ? r.title : undefined;
  const state = typeof r.state === "string" ? r.state : "queued";
  return `${name(r.taskId, title)}: delegated${worker ? ` to ${worker}` : ""} (${state})`;
}

/** The message shown when a delegation started: the task's title and id (and the others
 * of a comparison), so the user can find it again (`baton inspect <id>`, the task view). */
export function startedMessage(result: unknown, worker?: string | null): string | undefined {
  if (typeof result !== "object" || result === null) return undefined;
  const r = result as { taskId?: unknown; title?: unknown; taskIds?: unknown };
  if (typeof r.taskId !== "string") return undefined;
  const title = typeof r.title === "string" && r.title ? `"${r.title}" ` : "";
  const ids = Array.isArray(r.taskIds) && r.taskIds.length > 1 ? r.taskIds.map(String) : [r.taskId];
  const tasks = ids.length > 1 ? `tasks ${ids.join(", ")}` : `task ${r.taskId}`;
  return `Baton: started ${title}(${tasks})${worker ? ` with ${worker}` : ""}.`;
}

/** A task's summary arrived: a line when its state changed (not for an older summary). */
export function stateLine(old: TaskSummary | undefined, now: TaskSummary): string | undefined {
  if (old !== undefined && (old.updatedAt > now.updatedAt || old.state === now.state)) return undefined;
  if (old === undefined && !["queued", "preparing", "running"].includes(now.state)) return undefined;
  const what =
    now.state === "running" && old?.state !== "verifying"
      ? `started${now.worker ? ` (${now.worker})` : ""}`
      : SETTLED.has(now.state)
        ? `settled: ${now.state}`
        : now.state.replace(/_/g, " ");
  const from = old ? ` (was ${old.state.replace(/_/g, " ")})` : "";
  const why = now.message && now.message !== now.state ? ` — ${now.message}` : "";
  return `${name(now.id, now.title)}: ${what}${from}${why}`;
}

interface Listed {
  hunkId?: unknown;
  reason?: unknown;
}

function listed(value: unknown): Listed[] {
  return Array.isArray(value) ? value.filter((v): v is Listed => typeof v === "object" && v !== null) : [];
}

/** The answer of `baton.accept` / `baton.reject`, as one line (conflicts named). */
export function decisionLine(verb: "accept" | "reject", taskId: string, result: unknown, title?: string): string {
  const r = (typeof result === "object" && result !== null ? result : {}) as Record<string, unknown>;
  const state = typeof r.state === "string" ? `; task ${r.state.replace(/_/g, " ")}` : "";
  if (verb === "reject") {
    const n = Array.isArray(r.rejected) ? r.rejected.length : 0;
    return `${name(taskId, title)}: rejected ${n} hunk(s)${state}`;
  }
  const applied = Array.isArray(r.applied) ? r.applied.length : 0;
  const parts = [`${applied} hunk(s) applied`];
  for (const [key, label] of [
    ["conflicts", "conflict"],
    ["refused", "refused"],
    ["notApplied", "not applied"],
  ] as const) {
    const items = listed(r[key]);
    if (items.length > 0) parts.push(`${items.length} ${label}: ${items.map((i) => `${String(i.hunkId)} (${String(i.reason)})`).join(", ")}`);
  }
  return `${name(taskId, title)}: accept: ${parts.join("; ")}${state}`;
}

/** The answer of `baton.cancel` / `baton.retry`. */
export function moveLine(verb: string, taskId: string, result: unknown, title?: string): string {
  const state = typeof result === "object" && result !== null ? (result as { state?: unknown }).state : undefined;
  return `${name(taskId, title)}: ${verb} asked${typeof state === "string" ? ` (now ${state.replace(/_/g, " ")})` : ""}`;
}
