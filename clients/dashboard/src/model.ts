/**
 * What the page knows: the window's tasks as the snapshot and the live frames left them, and
 * the per-worker sums and per-day trend computed from them (pure; no DOM).
 *
 * The sums are the page's own, over the tasks created in the window (the snapshot's rule for
 * its `workers`), so they move with every live frame without asking the broker again.
 */

import type { Snapshot, Task, Usage } from "./api";

export interface WorkerRow {
  worker: string;
  tasks: number;
  states: Record<string, number>;
  input: number;
  cached: number;
  output: number;
  tokens: number;
  cost: number | null;
  estimated: boolean;
}

export interface DayPoint {
  /** The UTC day's start, Unix seconds. */
  day: number;
  tokens: number;
  cost: number;
}

const DAY = 86_400;

/** The phases a timeline draws, in the order a task goes through them. */
export const PHASES = ["queued", "preparing", "running", "verifying", "review", "settled"] as const;

const SETTLED = new Set(["applied", "rejected", "answered", "failed", "cancelled", "interrupted"]);

export function isSettled(state: string): boolean {
  return SETTLED.has(state);
}

export class Board {
  readonly tasks = new Map<string, Task>();
  window = "24h";
  since = 0;
  csrf = "";
  actions = false;
  /** Server time minus this page's clock, seconds. */
  private skew = 0;

  /** Take a snapshot. Rows pushed meanwhile that are newer than the snapshot's stay (the
   * socket opens before the snapshot is read, so a push may overtake it), and so do tasks
   * pushed that the snapshot's rule takes in (created in the window, or not settled). */
  load(snap: Snapshot, clientNow = Date.now() / 1000): void {
    const pushed = [...this.tasks.values()];
    this.tasks.clear();
    for (const t of snap.tasks) this.tasks.set(t.id, t);
    for (const t of pushed) {
      const got = this.tasks.get(t.id);
      if (got !== undefined ? t.updatedAt > got.updatedAt : t.createdAt >= snap.since || !isSettled(t.state)) this.tasks.set(t.id, t);
    }
    this.window = snap.window;
    this.since = snap.since;
    this.csrf = snap.csrf;
    this.actions = snap.actions;
    this.skew = snap.now - clientNow;
  }

  /** The broker's time now, as far as this page can tell. */
  now(clientNow = Date.now() / 1000): number {
    return clientNow + this.skew;
  }

  /** Replace tasks with their newer versions (a live `tasks` frame, a detail); new ones
   * join; an older row of a task (an answer a push overtook) is dropped. */
  update(tasks: Task[]): void {
    for (const t of tasks) {
      const got = this.tasks.get(t.id);
      if (got === undefined || t.updatedAt >= got.updatedAt) this.tasks.set(t.id, t);
    }
  }

  /** Newest first. */
  list(): Task[] {
    return [...this.tasks.values()].sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1));
  }

  /** The tasks the sums count: created in the window. */
  counted(): Task[] {
    return this.list().filter((t) => t.createdAt >= this.since);
  }

  /** The time the timeline shows: from the first shown task's start (not before the
   * window's), with a margin, to now — a window of 30 days with tasks of the last minute
   * shows that minute. */
  span(clientNow = Date.now() / 1000): { from: number; to: number } {
    const to = this.now(clientNow);
    const starts = [...this.tasks.values()].map((t) => t.timeline[0]?.start ?? t.createdAt);
    const first = starts.length > 0 ? Math.min(...starts) : to - 3600;
    const from = Math.max(this.since, first);
    return { from: from - Math.max(2, (to - from) * 0.03), to };
  }

  /** The task's elapsed seconds: to its settling, or to now. */
  elapsed(t: Task, clientNow = Date.now() / 1000): number {
    if (t.settledAt !== null) return Math.max(0, t.settledAt - t.createdAt);
    return Math.max(t.elapsed, this.now(clientNow) - t.createdAt);
  }

  workers(): WorkerRow[] {
    return workerRows(this.counted());
  }

  /** Tokens and cost per UTC day of the window, per worker (days with nothing included). */
  trend(clientNow = Date.now() / 1000): { days: number[]; workers: Map<string, DayPoint[]> } {
    return dayTrend(this.counted(), this.since, this.now(clientNow));
  }
}

export function workerRows(tasks: Task[]): WorkerRow[] {
  const rows = new Map<string, WorkerRow>();
  for (const t of tasks) {
    let r = rows.get(t.worker);
    if (r === undefined) {
      r = { worker: t.worker, tasks: 0, states: {}, input: 0, cached: 0, output: 0, tokens: 0, cost: null, estimated: false };
      rows.set(t.worker, r);
    }
    add(r, t.usage);
    r.tasks += 1;
    r.states[t.state] = (r.states[t.state] ?? 0) + 1;
  }
  return [...rows.values()].sort((a, b) => b.tasks - a.tasks || (a.worker < b.worker ? -1 : 1));
}

function add(r: WorkerRow, u: Usage): void {
  r.input += u.input;
  r.cached += u.cached;
  r.output += u.output;
  r.tokens += u.tokens;
  if (u.cost !== null) {
    r.cost = (r.cost ?? 0) + u.cost;
    r.estimated ||= u.estimated;
  }
}

export function dayStart(ts: number): number {
  return Math.floor(ts / DAY) * DAY;
}

export function dayTrend(tasks: Task[], since: number, now: number): { days: number[]; workers: Map<string, DayPoint[]> } {
  const first = dayStart(Math.max(since, now - 30 * DAY));
  const days: number[] = [];
  for (let d = first; d <= now; d += DAY) days.push(d);
  const workers = new Map<string, DayPoint[]>();
  for (const t of tasks) {
    let points = workers.get(t.worker);
    if (points === undefined) {
      points = days.map((day) => ({ day, tokens: 0, cost: 0 }));
      workers.set(t.worker, points);
    }
    const p = points[Math.floor((dayStart(t.createdAt) - first) / DAY)];
    if (p === undefined) continue;
    p.tokens += t.usage.tokens;
    p.cost += t.usage.cost ?? 0;
  }
  return { days, workers };
}
