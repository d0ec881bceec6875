/**
 * The broker's dashboard API as the page reads it (docs/reference/dashboard.md): the
 * snapshot, a task's detail and the live messages, with readers that check the JSON before
 * any of it is used (pure; no DOM).
 */

export type Json = Record<string, unknown>;

export interface Usage {
  input: number;
  cached: number;
  output: number;
  tokens: number;
  cost: number | null;
  estimated: boolean;
}

export interface Segment {
  state: string;
  /** queued, preparing, running, verifying, review or settled: what the bar is drawn as. */
  phase: string;
  start: number;
  /** null while the task is in it. */
  end: number | null;
}

export interface Task {
  id: string;
  title: string;
  worker: string;
  model: string;
  state: string;
  completion: string;
  message: string;
  createdAt: number;
  /** When the broker last changed the task: of two rows of it, the later one is right. */
  updatedAt: number;
  settledAt: number | null;
  elapsed: number;
  timeline: Segment[];
  usage: Usage;
}

export interface Day {
  day: string;
  tasks: number;
  tokens: number;
  cost: number | null;
}

export interface Worker {
  worker: string;
  tasks: number;
  states: Record<string, number>;
  usage: Usage;
  days: Day[];
}

export interface Snapshot {
  now: number;
  window: string;
  since: number;
  csrf: string;
  actions: boolean;
  tasks: Task[];
  workers: Worker[];
  totals: Usage & { tasks: number };
}

export interface ToolCall {
  seq: number;
  name: string;
  input: string;
  files: string[];
  ok: boolean | null;
}

export interface Check {
  name: string;
  passed: boolean;
  exit: number | null;
  seconds: number | null;
  output: string;
}

export interface Finding {
  path: string;
  line: number | null;
  message: string;
}

export interface Review {
  worker: string;
  verdict: string;
  summary: string;
  findings: Finding[];
}

export interface Hunk {
  id: string;
  state: string;
  oldStart: number;
  newStart: number;
  oldText: string;
  newText: string;
}

export interface FileDiff {
  path: string;
  status: string;
  added: number;
  removed: number;
  hunks: Hunk[];
}

export interface Detail {
  task: Task;
  transcript: string[];
  tools: ToolCall[];
  files: string[];
  checks: Check[];
  review: Review[];
  diff: { final: boolean; files: FileDiff[] } | null;
  seq: number;
}

/** One committed event of a task (the websocket's `watch` shape). */
export interface Event {
  taskId: string;
  seq: number;
  ts: number;
  type: string;
  data: Json;
}

/** A followed task's transcript changed: its lines from `start` on are now `lines`. */
export interface TranscriptChange {
  taskId: string;
  seq: number;
  start: number;
  lines: string[];
}

export type Live =
  | { type: "hello"; now: number }
  | { type: "events"; events: Event[] }
  | { type: "tasks"; tasks: Task[] }
  | ({ type: "transcript" } & TranscriptChange)
  | { type: "error"; taskId: string; message: string }
  | { type: "overflow" };

/** The windows the broker answers for, shortest first. */
export const WINDOWS: readonly { value: string; label: string }[] = [
  { value: "1h", label: "last hour" },
  { value: "6h", label: "last 6 hours" },
  { value: "24h", label: "last 24 hours" },
  { value: "7d", label: "last 7 days" },
  { value: "30d", label: "last 30 days" },
];

export function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function str(v: unknown, fallback = ""): string {
  return typeof v === "string" ? v : fallback;
}

function num(v: unknown, fallback = 0): number {
  return typeof v === "number" && Number.isFinite(v) ? v : fallback;
}

function numOrNull(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

function list(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

function objects(v: unknown): Json[] {
  return list(v).filter(isObject);
}

function strings(v: unknown): string[] {
  return list(v).filter((s): s is string => typeof s === "string");
}

export function readUsage(v: unknown): Usage {
  const u = isObject(v) ? v : {};
  const input = num(u.input);
  const cached = num(u.cached);
  const output = num(u.output);
  return {
    input,
    cached,
    output,
    tokens: num(u.tokens, input + cached + output),
    cost: numOrNull(u.cost),
    estimated: u.costSource === "estimated",
  };
}

export function readSegment(v: Json): Segment {
  return { state: str(v.state), phase: str(v.phase, str(v.state)), start: num(v.start), end: numOrNull(v.end) };
}

export function readTask(v: Json): Task {
  return {
    id: str(v.id),
    title: str(v.title) || str(v.instruction) || str(v.id),
    worker: str(v.worker, "?"),
    model: str(v.model),
    state: str(v.state, "queued"),
    completion: str(v.completion),
    message: str(v.message),
    createdAt: num(v.createdAt),
    updatedAt: num(v.updatedAt),
    settledAt: numOrNull(v.settledAt),
    elapsed: num(v.elapsed),
    timeline: objects(v.timeline).map(readSegment),
    usage: readUsage(v.usage),
  };
}

export function readWorker(v: Json): Worker {
  const states: Record<string, number> = {};
  if (isObject(v.states)) for (const [k, n] of Object.entries(v.states)) states[k] = num(n);
  return {
    worker: str(v.worker, "?"),
    tasks: num(v.tasks),
    states,
    usage: readUsage(v),
    days: objects(v.days).map((d) => ({ day: str(d.day), tasks: num(d.tasks), tokens: num(d.tokens), cost: numOrNull(d.cost) })),
  };
}

export function readSnapshot(v: unknown): Snapshot {
  if (!isObject(v)) throw new Error("the snapshot is not a JSON object");
  const totals = isObject(v.totals) ? v.totals : {};
  return {
    now: num(v.now, Date.now() / 1000),
    window: str(v.window, "24h"),
    since: num(v.since),
    csrf: str(v.csrf),
    actions: v.actions === true,
    tasks: objects(v.tasks).map(readTask).filter((t) => t.id !== ""),
    workers: objects(v.workers).map(readWorker),
    totals: { ...readUsage(totals), tasks: num(totals.tasks) },
  };
}

export function readDetail(v: unknown): Detail {
  if (!isObject(v) || !isObject(v.task)) throw new Error("the task's detail is not a JSON object");
  const diff = isObject(v.diff) ? v.diff : null;
  return {
    task: readTask(v.task),
    transcript: strings(v.transcript),
    tools: objects(v.tools).map((t) => ({
      seq: num(t.seq),
      name: str(t.name, "tool"),
      input: str(t.input),
      files: strings(t.files),
      ok: typeof t.ok === "boolean" ? t.ok : null,
    })),
    files: strings(v.files),
    checks: objects(v.checks).map((c) => ({
      name: str(c.name, "check"),
      passed: c.passed === true,
      exit: numOrNull(c.exit),
      seconds: numOrNull(c.seconds),
      output: str(c.output),
    })),
    review: objects(v.review).map((r) => ({
      worker: str(r.worker, "?"),
      verdict: str(r.verdict),
      summary: str(r.summary),
      findings: objects(r.findings).map((f) => ({ path: str(f.path), line: numOrNull(f.line), message: str(f.message) })),
    })),
    diff:
      diff === null
        ? null
        : {
            final: diff.final === true,
            files: objects(diff.files).map((f) => ({
              path: str(f.path),
              status: str(f.status),
              added: num(f.added),
              removed: num(f.removed),
              hunks: objects(f.hunks).map((h) => ({
                id: str(h.id),
                state: str(h.state, "pending"),
                oldStart: num(h.oldStart),
                newStart: num(h.newStart),
                oldText: str(h.oldText),
                newText: str(h.newText),
              })),
            })),
          },
    seq: num(v.seq),
  };
}

export function readEvent(v: Json): Event {
  return { taskId: str(v.taskId), seq: num(v.seq), ts: num(v.ts), type: str(v.type), data: isObject(v.data) ? v.data : {} };
}

/** A live frame, or null for one the page does not know (ignored). */
export function readLive(text: string): Live | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isObject(v)) return null;
  switch (v.type) {
    case "hello":
      return { type: "hello", now: num(v.now) };
    case "transcript":
      return { type: "transcript", taskId: str(v.taskId), seq: num(v.seq), start: num(v.start), lines: strings(v.lines) };
    case "error":
      return { type: "error", taskId: str(v.taskId), message: str(v.message) };
    case "events":
      return { type: "events", events: objects(v.events).map(readEvent) };
    case "tasks":
      return { type: "tasks", tasks: objects(v.tasks).map(readTask).filter((t) => t.id !== "") };
    case "overflow":
      return { type: "overflow" };
    default:
      return null;
  }
}
