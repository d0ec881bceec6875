/**
 * The Baton language server's custom protocol as the client sees it: the payloads of the
 * `baton/tasks`, `baton/status` and `baton/diff` notifications and the `baton.*` commands,
 * with readers that check untrusted JSON before any of it is used (pure; no vscode import).
 */

/** A position as LSP sends it (0-based line, UTF-16 character). */
export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

/** "pending", "accepted" or "rejected". */
export type HunkState = string;

/** One hunk of a task's diff, placed in the document the user has now. */
export interface Hunk {
  id: string;
  range: Range;
  oldText: string;
  newText: string;
  state: HunkState;
  stale: boolean;
  /** Accept would call it a conflict with the user's edits (said beforehand). */
  conflict: boolean;
  wholeFile: boolean;
  /** New since the last review (after a `baton.revise` turn). */
  revised?: boolean;
}

export interface FileDiff {
  uri: string;
  path: string;
  oldPath: string | null;
  status: string;
  binary: boolean;
  version: number | null;
  hunks: Hunk[];
}

/** `baton/diff`: one task's diff (a draft while it works, the final one in review). */
export interface TaskDiff {
  taskId: string;
  title: string;
  state: string;
  final: boolean;
  files: FileDiff[];
}

/** How agents run here (`baton/status`'s `sandbox`): under the user's `sandbox` setting,
 * against the sandbox this machine has. */
export interface SandboxState {
  agents: "sandboxed" | "unsandboxed" | "refused";
  /** The `sandbox` setting: "auto", "require" or "off". */
  setting: string;
  /** Why no sandbox works here ("" when one does). */
  why: string;
  /** One plain line saying it all. */
  summary: string;
  /** What to do about it ("" when agents run sandboxed). */
  advice: string;
}

/** `baton/status`: the counts the status bar shows, and how agents run (absent from an older
 * server). */
export interface StatusCounts {
  running: number;
  needsInput: number;
  review: number;
  failed: number;
  sandbox?: SandboxState;
}

/** A task as `baton/tasks` and `baton.tasks` describe it. */
/** What a task's agent used, summed over its attempts (the server's `Usage.to_json()`):
 * `input` at the full price, `cached` input from the prompt cache, `output` with its
 * `reasoning`; `cost` in USD, `reported` by the CLI or `estimated` from a price table. */
export interface TaskUsage {
  input: number;
  cached: number;
  output: number;
  reasoning: number | null;
  cost: number | null;
  costSource: "reported" | "estimated" | null;
}

export interface TaskSummary {
  id: string;
  title: string;
  state: string;
  action: string;
  worker: string | null;
  model: string | null;
  root: string;
  message: string;
  summary: string;
  updatedAt: number;
  createdAt: number;
  next: string[];
  /** The tool whose proposal this task is (`"claude-code"`), else null: Baton writes nothing
   * for a proposal; once it is applied the proposer writes the file. */
  proposedBy: string | null;
  /** Tokens and cost so far; absent until the agent reported any. */
  usage?: TaskUsage;
}

/** The arguments of the server's `baton.delegate` command. */
export interface DelegateArgs {
  uri: string;
  range?: Range;
  kind?: "delegate" | "fix" | "explain" | "tests";
  instruction?: string;
  diagnostics?: unknown[];
  worker?: string;
  model?: string;
}

/** The arguments of `baton.accept` / `baton.reject`. */
export interface HunkArgs {
  taskId: string;
  hunkIds?: string[];
}

export const NOTIFY_TASKS = "baton/tasks";
export const NOTIFY_STATUS = "baton/status";
export const NOTIFY_DIFF = "baton/diff";
export const NOTIFY_PERMISSION = "baton/permission";

/** One option of a permission request (`allow`, `always`, `reject`…). */
export interface PermissionOption {
  id: string;
  name: string;
  kind: string;
}

/** `baton/permission`: an ACP agent asks permission (status `pending`), or the request was
 * answered (`answered`, with `answer` and `by`) or dropped (`cancelled`). */
export interface PermissionRequest {
  taskId: string;
  id: string;
  title: string;
  tool: string;
  kind: string;
  /** A command line, or a diff of the file change. */
  preview: string;
  command: string | null;
  files: string[];
  options: PermissionOption[];
  status: string;
  answer: string | null;
  by: string | null;
}

/** The server's executeCommand ids (registered by vscode-languageclient, never by us). */
export const ServerCommand = {
  delegate: "baton.delegate",
  cancel: "baton.cancel",
  reply: "baton.reply",
  revise: "baton.revise",
  checkpoints: "baton.checkpoints",
  stepBack: "baton.stepBack",
  steer: "baton.steer",
  retry: "baton.retry",
  accept: "baton.accept",
  reject: "baton.reject",
  reopen: "baton.reopen",
  reaccept: "baton.reaccept",
  resolve: "baton.resolve",
  proposed: "baton.proposed",
  tasks: "baton.tasks",
  inspect: "baton.inspect",
  transcript: "baton.transcript",
  diff: "baton.diff",
  status: "baton.status",
  answerPermission: "baton.answerPermission",
  workers: "baton.workers",
  ask: "baton.ask",
  dashboard: "baton.dashboard",
} as const;

/** One profile of `baton.workers`, as the server resolved it for a folder. */
export interface WorkerInfo {
  name: string;
  provider: string;
  model: string | null;
  label: string;
  enabled: boolean;
  /** The project's config lets its tasks use it. */
  allowed: boolean;
  /** Installed, logged in and enabled, as far as the server can tell without running it. */
  canRun: boolean;
  /** Why it cannot run ("" when it can). */
  problem: string;
  /** Where it was configured: "user", "project" or "default" (found on PATH). */
  source: string | null;
}

/** `baton.workers`: the workers a task in the document's folder may use, and the default. */
export interface Workers {
  default: string | null;
  defaultReason: string;
  workers: WorkerInfo[];
}

/** States in which a task's agent is at work. */
export const WORKING_STATES: ReadonlySet<string> = new Set([
  "queued",
  "preparing",
  "running",
  "verifying",
  "rate_limited",
]);

// -- readers ---------------------------------------------------------------------------------

type Json = Record<string, unknown>;

export class ProtocolError extends Error {}

function obj(value: unknown, what: string): Json {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ProtocolError(`${what} must be an object`);
  }
  return value as Json;
}

function str(o: Json, key: string, what: string): string {
  const v = o[key];
  if (typeof v !== "string") throw new ProtocolError(`${what}.${key} must be a string`);
  return v;
}

function optStr(o: Json, key: string): string | null {
  const v = o[key];
  return typeof v === "string" ? v : null;
}

function num(o: Json, key: string, what: string): number {
  const v = o[key];
  if (typeof v !== "number" || !Number.isFinite(v)) {
    throw new ProtocolError(`${what}.${key} must be a number`);
  }
  return v;
}

function count(o: Json, key: string): number {
  const v = o[key];
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
}

function readPosition(value: unknown, what: string): Position {
  const o = obj(value, what);
  return { line: num(o, "line", what), character: num(o, "character", what) };
}

export function readRange(value: unknown, what = "range"): Range {
  const o = obj(value, what);
  return { start: readPosition(o.start, `${what}.start`), end: readPosition(o.end, `${what}.end`) };
}

function readHunk(value: unknown, what: string): Hunk {
  const o = obj(value, what);
  return {
    id: str(o, "id", what),
    range: readRange(o.range, `${what}.range`),
    oldText: str(o, "oldText", what),
    newText: str(o, "newText", what),
    state: str(o, "state", what),
    stale: o.stale === true,
    conflict: o.conflict === true,
    wholeFile: o.wholeFile === true,
    revised: o.revised === true,
  };
}

function readFile(value: unknown, what: string): FileDiff {
  const o = obj(value, what);
  const hunks = Array.isArray(o.hunks) ? o.hunks : [];
  const version = o.version;
  return {
    uri: str(o, "uri", what),
    path: str(o, "path", what),
    oldPath: optStr(o, "oldPath"),
    status: optStr(o, "status") ?? "modified",
    binary: o.binary === true,
    version: typeof version === "number" ? version : null,
    hunks: hunks.map((h, i) => readHunk(h, `${what}.hunks[${i}]`)),
  };
}

/** A `baton/diff` payload (or the answer of `baton.diff`). Throws ProtocolError. */
export function readTaskDiff(value: unknown): TaskDiff {
  const o = obj(value, "baton/diff");
  const files = Array.isArray(o.files) ? o.files : [];
  return {
    taskId: str(o, "taskId", "baton/diff"),
    title: optStr(o, "title") ?? "",
    state: str(o, "state", "baton/diff"),
    final: o.final === true,
    files: files.map((f, i) => readFile(f, `baton/diff.files[${i}]`)),
  };
}

const AGENTS = ["sandboxed", "unsandboxed", "refused"] as const;

/** A `baton/status` payload; missing or bad counts read as 0, a `sandbox` that says nothing
 * known is left out. */
export function readStatus(value: unknown): StatusCounts {
  const o = obj(value, "baton/status");
  const out: StatusCounts = {
    running: count(o, "running"),
    needsInput: count(o, "needsInput"),
    review: count(o, "review"),
    failed: count(o, "failed"),
  };
  const sandbox = readSandbox(o.sandbox);
  if (sandbox) out.sandbox = sandbox;
  return out;
}

function readSandbox(value: unknown): SandboxState | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const o = value as Json;
  const agents = AGENTS.find((a) => a === o.agents);
  if (agents === undefined) return undefined;
  return {
    agents,
    setting: optStr(o, "setting") ?? "auto",
    why: optStr(o, "why") ?? "",
    summary: optStr(o, "summary") ?? "",
    advice: optStr(o, "advice") ?? "",
  };
}

export function readTask(value: unknown, what = "task"): TaskSummary {
  const o = obj(value, what);
  const next = Array.isArray(o.next) ? o.next.filter((n): n is string => typeof n === "string") : [];
  const summary: TaskSummary = {
    id: str(o, "id", what),
    title: optStr(o, "title") ?? "",
    state: str(o, "state", what),
    action: optStr(o, "action") ?? "delegate",
    worker: optStr(o, "worker"),
    model: optStr(o, "model"),
    root: optStr(o, "root") ?? "",
    message: optStr(o, "message") ?? "",
    summary: optStr(o, "summary") ?? "",
    updatedAt: typeof o.updatedAt === "number" ? o.updatedAt : 0,
    createdAt: typeof o.createdAt === "number" ? o.createdAt : 0,
    next,
    proposedBy: optStr(o, "proposedBy") || null,
  };
  const usage = readUsage(o.usage);
  if (usage) summary.usage = usage;
  return summary;
}

/** A task's `usage`, or undefined when there is none (or it is not an object). */
export function readUsage(value: unknown): TaskUsage | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const o = value as Json;
  const cost = typeof o.cost === "number" && Number.isFinite(o.cost) ? o.cost : null;
  const source = o.cost_source === "reported" || o.cost_source === "estimated" ? o.cost_source : null;
  return {
    input: count(o, "input"),
    cached: count(o, "cached"),
    output: count(o, "output"),
    reasoning: typeof o.reasoning === "number" ? count(o, "reasoning") : null,
    cost,
    costSource: cost === null ? null : (source ?? "reported"),
  };
}

/** A `baton/tasks` payload or the answer of `baton.tasks`: `{tasks: [...]}`. */
export function readTasks(value: unknown): TaskSummary[] {
  const o = obj(value, "baton/tasks");
  const tasks = Array.isArray(o.tasks) ? o.tasks : [];
  return tasks.map((t, i) => readTask(t, `tasks[${i}]`));
}

/** A `baton/permission` payload. Throws ProtocolError. */
export function readPermission(value: unknown): PermissionRequest {
  const what = "baton/permission";
  const o = obj(value, what);
  const options = (Array.isArray(o.options) ? o.options : [])
    .filter((v): v is Json => typeof v === "object" && v !== null && !Array.isArray(v))
    .filter((v) => typeof v.id === "string" && v.id !== "")
    .map((v) => ({ id: v.id as string, name: optStr(v, "name") || (v.id as string), kind: optStr(v, "kind") ?? "" }));
  const files = Array.isArray(o.files) ? o.files.filter((f): f is string => typeof f === "string") : [];
  const tool = optStr(o, "tool") ?? "";
  return {
    taskId: str(o, "taskId", what),
    id: str(o, "id", what),
    title: optStr(o, "title") ?? "",
    tool,
    kind: optStr(o, "kind") ?? "",
    preview: optStr(o, "preview") ?? "",
    command: optStr(o, "command"),
    files,
    options,
    status: str(o, "status", what),
    answer: optStr(o, "answer"),
    by: optStr(o, "by"),
  };
}

export function readWorkers(value: unknown): Workers {
  const o = obj(value, "workers");
  if (!Array.isArray(o.workers)) throw new ProtocolError("workers.workers must be a list");
  return {
    default: optStr(o, "default") || null,
    defaultReason: optStr(o, "default_reason") ?? "",
    workers: o.workers.map((v: unknown, i: number): WorkerInfo => {
      const w = obj(v, `workers[${i}]`);
      return {
        name: str(w, "name", `workers[${i}]`),
        provider: optStr(w, "provider") ?? "",
        model: optStr(w, "model") || null,
        label: optStr(w, "label") ?? "",
        enabled: w.enabled !== false,
        allowed: w.allowed !== false,
        canRun: w.can_run !== false, // an older server does not say
        problem: optStr(w, "problem") ?? "",
        source: optStr(w, "source"),
      };
    }),
  };
}
