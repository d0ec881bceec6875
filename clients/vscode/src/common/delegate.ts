/**
 * "Delegate Selection…": ask for an instruction (with history) and optionally the worker,
 * model and kind, then run the server's `baton.delegate`. The UI is passed in, so the flow is
 * tested without VS Code.
 */

import { History } from "./history";
import { DelegateArgs, Range, readRange } from "./protocol";

export type Kind = NonNullable<DelegateArgs["kind"]>;
export const KINDS: readonly Kind[] = ["delegate", "fix", "explain", "tests"];

export interface Choices {
  worker: string | null;
  model: string | null;
  kind: Kind;
}

export interface DelegateUi {
  /** The active editor's document and selection (file documents only). */
  selection(): { uri: string; range: Range; label: string } | undefined;
  /** The instruction: typed, or picked from the history. undefined: dismissed. */
  askInstruction(history: string[], where: string): Promise<string | undefined>;
  /** Worker, model and kind. undefined: dismissed. */
  askChoices(defaults: Choices, workers: string[]): Promise<Choices | undefined>;
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
  workers: string[];
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
    const picked = await ui.askChoices(choices, options.workers);
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
