/**
 * "Delegate Selection…": ask for an instruction (with history) and optionally the worker,
 * model and kind, then run the server's `baton.delegate`. The workers offered are the
 * server's (`baton.workers` for the document's folder: the same profiles routing and
 * `baton workers` read), each with its provider, model and whether it can run. The UI is
 * passed in, so the flow is tested without VS Code.
 */

import { History } from "./history";
import { DelegateArgs, Range, Workers, readRange } from "./protocol";

export type Kind = NonNullable<DelegateArgs["kind"]>;
export const KINDS: readonly Kind[] = ["delegate", "fix", "explain", "tests"];

export interface Choices {
  worker: string | null;
  model: string | null;
  kind: Kind;
}

/** One row of the worker picker; `value` null: the server's default worker. */
export interface WorkerItem {
  label: string;
  description: string;
  detail?: string;
  value: string | null;
}

export interface DelegateUi {
  /** The active editor's document and selection (file documents only). */
  selection(): { uri: string; range: Range; label: string } | undefined;
  /** The instruction: typed, or picked from the history. undefined: dismissed. */
  askInstruction(history: string[], where: string): Promise<string | undefined>;
  /** The server's workers for a task delegated from `uri` (`baton.workers`). */
  workers(uri: string): Promise<Workers>;
  /** Worker (from `workers`), model and kind. undefined: dismissed. */
  askChoices(defaults: Choices, workers: WorkerItem[]): Promise<Choices | undefined>;
  /** Run `baton.delegate` on the server; resolves to its answer. */
  delegate(args: DelegateArgs): Promise<unknown>;
  /** Store the new history. */
  saveHistory(items: string[]): Promise<void>;
  error(message: string): void;
}

export interface DelegateOptions {
  /** Ask for worker, model and kind too. */
  askChoices: boolean;
  defaults: Choices;
  /** The `baton.workers` setting: offer only these of the server's workers (empty: all). */
  onlyWorkers: string[];
  /** Arguments given by the caller (a code action, a keybinding's args). */
  given?: unknown;
}

function given(value: unknown): Partial<DelegateArgs> {
  const arg: unknown = Array.isArray(value) ? value[0] : value;
  if (typeof arg !== "object" || arg === null) return {};
  const o = arg as Record<string, unknown>;
  const out: Partial<DelegateArgs> = {};
  if (typeof o.uri === "string") out.uri = o.uri;
  if (o.range !== undefined) {
    try {
      out.range = readRange(o.range);
    } catch {
      // ignore a bad range: the selection is used instead
    }
  }
  if (typeof o.kind === "string" && (KINDS as readonly string[]).includes(o.kind)) out.kind = o.kind as Kind;
  if (typeof o.instruction === "string" && o.instruction.trim() !== "") out.instruction = o.instruction;
  if (Array.isArray(o.diagnostics)) out.diagnostics = o.diagnostics;
  if (typeof o.worker === "string" && o.worker) out.worker = o.worker;
  if (typeof o.model === "string" && o.model) out.model = o.model;
  return out;
}

/**
 * The worker picker's rows: the server's default first, then each profile the server lists
 * (only those of `only` when it names any) with its provider and model, and why it cannot
 * run when it cannot. Without the server's answer, the names of `only` alone.
 */
export function workerItems(known: Workers | undefined, only: string[], current: string | null): WorkerItem[] {
  const first: WorkerItem = {
    label: "(default)",
    description:
      current !== null
        ? `baton.worker: ${current}`
        : known === undefined
          ? "the server's default worker"
          : known.default
            ? `the server's default: ${known.default}`
            : "no default worker",
    value: null,
  };
  if (known !== undefined && known.defaultReason) first.detail = known.defaultReason;
  if (known === undefined) {
    return [first, ...only.map((w) => ({ label: w, description: w === current ? "current" : "", value: w }))];
  }
  const listed = only.length > 0 ? known.workers.filter((w) => only.includes(w.name)) : known.workers;
  const rows = listed.map((w): WorkerItem => {
    const marks = [w.name === known.default ? "default" : "", w.name === current ? "current" : ""].filter(Boolean);
    const what = [w.provider, w.model ?? "", ...marks].filter(Boolean).join(" · ");
    const why = !w.enabled ? "disabled" : !w.allowed ? "not allowed in this project" : !w.canRun ? `cannot run: ${w.problem || "see baton doctor"}` : "";
    const row: WorkerItem = { label: why ? w.name : `$(check) ${w.name}`, description: what, value: w.name };
    const detail = why || w.label;
    if (detail) row.detail = detail;
    return row;
  });
  return [first, ...rows];
}

/** The outcome: the new task's id, or undefined when dismissed or refused. */
export async function delegateSelection(
  ui: DelegateUi,
  history: History,
  options: DelegateOptions,
): Promise<string | undefined> {
  const g = given(options.given);
  const sel = ui.selection();
  const uri = g.uri ?? sel?.uri;
  if (uri === undefined) {
    ui.error("Baton: open a file and select the code to delegate first.");
    return undefined;
  }
  const range = g.range ?? (g.uri === undefined || g.uri === sel?.uri ? sel?.range : undefined);
  let choices: Choices = {
    worker: g.worker ?? options.defaults.worker,
    model: g.model ?? options.defaults.model,
    kind: g.kind ?? options.defaults.kind,
  };
  if (options.askChoices) {
    const known = await ui.workers(uri).catch(() => undefined);
    const picked = await ui.askChoices(choices, workerItems(known, options.onlyWorkers, choices.worker));
    if (picked === undefined) return undefined;
    choices = picked;
  }
  let instruction = g.instruction;
  if (instruction === undefined) {
    const where = sel?.label ?? uri;
    instruction = (await ui.askInstruction(history.list(), where))?.trim();
    if (!instruction) return undefined;
    await ui.saveHistory(history.add(instruction));
  }
  const args: DelegateArgs = { uri, kind: choices.kind, instruction };
  if (range !== undefined) args.range = range;
  if (g.diagnostics !== undefined) args.diagnostics = g.diagnostics;
  if (choices.worker) args.worker = choices.worker;
  if (choices.model) args.model = choices.model;
  let answer: unknown;
  try {
    answer = await ui.delegate(args);
  } catch (err) {
    ui.error(`Baton: could not delegate: ${err instanceof Error ? err.message : String(err)}`);
    return undefined;
  }
  const id = (answer as { taskId?: unknown } | null)?.taskId;
  return typeof id === "string" ? id : undefined;
}
