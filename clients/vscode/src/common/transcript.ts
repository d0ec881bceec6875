/**
 * Live transcripts as the client keeps them (pure; no vscode import): the answer of
 * `baton.transcript` and the `baton/transcript` changes that follow it, applied to each
 * task's lines. A change applies to the lines of event `since`; one that is not newer is
 * dropped, one after a gap asks for the whole transcript again.
 */

import { ProtocolError } from "./protocol";

export const NOTIFY_TRANSCRIPT = "baton/transcript";

/** The answer of `baton.transcript`. */
export interface TranscriptText {
  taskId: string;
  seq: number;
  lines: string[];
  following: boolean;
}

/** `baton/transcript`: the lines from `start` on, as of event `seq` (applies to `since`). */
export interface TranscriptChange {
  taskId: string;
  since: number;
  seq: number;
  start: number;
  lines: string[];
}

type Json = Record<string, unknown>;

function obj(value: unknown, what: string): Json {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new ProtocolError(`${what} must be an object`);
  return value as Json;
}

function int(o: Json, key: string, what: string): number {
  const v = o[key];
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0) throw new ProtocolError(`${what}.${key} must be a count`);
  return v;
}

function lines(o: Json, what: string): string[] {
  if (!Array.isArray(o.lines) || !o.lines.every((l) => typeof l === "string")) throw new ProtocolError(`${what}.lines must be strings`);
  return o.lines;
}

function taskId(o: Json, what: string): string {
  if (typeof o.taskId !== "string" || o.taskId === "") throw new ProtocolError(`${what}.taskId must be a string`);
  return o.taskId;
}

export function readTranscript(value: unknown): TranscriptText {
  const what = "baton.transcript";
  const o = obj(value, what);
  return { taskId: taskId(o, what), seq: int(o, "seq", what), lines: lines(o, what), following: o.following === true };
}

export function readTranscriptChange(value: unknown): TranscriptChange {
  const what = NOTIFY_TRANSCRIPT;
  const o = obj(value, what);
  return {
    taskId: taskId(o, what),
    since: int(o, "since", what),
    seq: int(o, "seq", what),
    start: int(o, "start", what),
    lines: lines(o, what),
  };
}

/** What became of a change: shown, not for us (old, or not followed), or a gap to reload. */
export type Applied = "applied" | "ignored" | "reload";

interface Kept {
  seq: number;
  lines: string[];
  /** The whole transcript was asked for: changes wait for it. */
  loading: boolean;
}

export class Transcripts {
  private readonly byTask = new Map<string, Kept>();

  /** Start keeping a task's transcript (its text comes with `reset`). */
  open(taskId: string): void {
    const kept = this.byTask.get(taskId);
    if (kept) kept.loading = true;
    else this.byTask.set(taskId, { seq: -1, lines: [], loading: true });
  }

  has(taskId: string): boolean {
    return this.byTask.has(taskId);
  }

  close(taskId: string): void {
    this.byTask.delete(taskId);
  }

  ids(): string[] {
    return [...this.byTask.keys()];
  }

  /** The text shown, or undefined before the first answer. */
  text(taskId: string): string | undefined {
    const kept = this.byTask.get(taskId);
    if (kept === undefined || kept.seq < 0) return undefined;
    return kept.lines.join("\n") + "\n";
  }

  lineCount(taskId: string): number {
    return this.byTask.get(taskId)?.lines.length ?? 0;
  }

  /** Take the whole transcript (the answer of `baton.transcript`). */
  reset(t: TranscriptText): boolean {
    const kept = this.byTask.get(t.taskId);
    if (kept === undefined) return false;
    kept.seq = t.seq;
    kept.lines = [...t.lines];
    kept.loading = false;
    return true;
  }

  apply(c: TranscriptChange): Applied {
    const kept = this.byTask.get(c.taskId);
    if (kept === undefined || kept.loading || c.seq <= kept.seq) return "ignored";
    if (c.since !== kept.seq || c.start > kept.lines.length) {
      kept.loading = true;
      return "reload";
    }
    kept.lines.splice(c.start, kept.lines.length - c.start, ...c.lines);
    kept.seq = c.seq;
    return "applied";
  }
}
