/**
 * Where a task's proposed lines stand in its proposal document (pure): the `baton-proposal:`
 * document is the user's current text with the task's pending hunks applied (proposal.ts),
 * so each hunk's new lines sit at its own start line moved by what the hunks above it added
 * or removed. The peek under a hunk and the lenses of the proposal side (the right side of
 * Open Diff, and the peek) use these lines.
 */

import type { LensPlan } from "./codeLens";
import { Command } from "./constants";
import { splitLines } from "./inlineDiff";
import { Hunk } from "./protocol";
import { Entry } from "./reviews";

/** A hunk's new lines in the proposal document: `start` to `end` inclusive; `count` 0 for a
 * hunk that only deletes (then `start` is the line the text below it moves up to). */
export interface ProposedLines {
  hunkId: string;
  start: number;
  end: number;
  count: number;
  /** Length of the last proposed line (the peek's range ends there). */
  endCharacter: number;
}

/** Lines a hunk's range spans: how many line breaks it replaces. */
function replacedBreaks(h: Hunk): number {
  return h.range.end.line - h.range.start.line;
}

function breaks(text: string): number {
  let n = 0;
  for (const c of text) if (c === "\n") n++;
  return n;
}

/** The proposed lines of each of ``hunks`` (one task's pending hunks of one file), in
 * document order; overlapping hunks (which applyHunks skips) are left out. */
export function proposedLines(hunks: readonly Hunk[]): ProposedLines[] {
  const sorted = [...hunks].sort((a, b) => a.range.start.line - b.range.start.line || a.range.start.character - b.range.start.character);
  const out: ProposedLines[] = [];
  let shift = 0;
  let lastEnd = -1;
  for (const h of sorted) {
    if (h.range.start.line < lastEnd) continue;
    lastEnd = h.range.end.line;
    const lines = splitLines(h.newText);
    const start = h.range.start.line + shift;
    const count = lines.length;
    out.push({
      hunkId: h.id,
      start,
      end: count === 0 ? start : start + count - 1,
      count,
      endCharacter: count === 0 ? 0 : lines[count - 1]!.length,
    });
    shift += breaks(h.newText) - replacedBreaks(h);
  }
  return out;
}

/** Whether a hunk needs its proposed lines shown as lines: it proposes more than one (a
 * single new line, or a deletion, reads well enough as its ghost). */
export function needsLines(h: Hunk): boolean {
  return splitLines(h.newText).length > 1;
}

/** The line of the user's document a hunk's peek opens under: its last old line (the peek
 * then stands right below the lines it would replace), or the line above an insertion. */
export function peekAnchor(h: Hunk): number {
  const { start, end } = h.range;
  const last = end.character === 0 && end.line > start.line ? end.line - 1 : end.line;
  if (splitLines(h.oldText).length === 0) return Math.max(0, start.line - 1);
  return Math.max(start.line, last);
}

/**
 * The lenses of a task's proposal document (the right side of Open Diff, and the peek):
 * "Accept file | Reject file" on top, "Accept | Reject" over each hunk's proposed lines
 * (a conflicting hunk: "Keep mine | Take theirs"). ``entries``: the task's pending hunks of
 * the file; a merge view (the agent's whole version, whose lines are not the proposal's) gets
 * only the file's lenses.
 */
export function proposalLenses(entries: readonly Entry[], ref: { taskId: string; uri: string; merge?: boolean }): LensPlan[] {
  const mine = entries.filter((e) => e.taskId === ref.taskId && e.final);
  if (mine.length === 0) return [];
  const file = { taskId: ref.taskId, uri: ref.uri };
  const label = `Baton ▸ ${mine[0]!.title || ref.taskId}`;
  const out: LensPlan[] = [
    { line: 0, title: `${label}: Accept file (${mine.length})`, command: Command.acceptFile, args: [file] },
    { line: 0, title: "Reject file", command: Command.rejectFile, args: [file] },
  ];
  if (ref.merge === true) return out;
  const byId = new Map(mine.map((e) => [e.hunk.id, e.hunk]));
  for (const l of proposedLines(mine.map((e) => e.hunk))) {
    const h = byId.get(l.hunkId)!;
    if (h.conflict) {
      const resolve = (title: string, choice: string): LensPlan => ({ line: l.start, title, command: Command.resolveHunk, args: [{ taskId: ref.taskId, hunkId: h.id, choice }] });
      out.push(resolve("$(warning) Conflicts with your edits: Keep mine", "mine"), resolve("Take theirs", "theirs"));
      continue;
    }
    const args = [{ taskId: ref.taskId, hunkIds: [h.id] }];
    out.push({ line: l.start, title: h.stale ? "Accept (edited since)" : h.revised === true ? "Accept (revised)" : "Accept", command: Command.acceptHunk, args });
    out.push({ line: l.start, title: "Reject", command: Command.rejectHunk, args });
  }
  return out;
}

/** The task's pending hunk whose proposed lines hold ``line`` of its proposal document (a
 * deletion: the line its text below moved up to), else none. */
export function hunkAtProposedLine(entries: readonly Entry[], taskId: string, line: number): Entry | undefined {
  const mine = entries.filter((e) => e.taskId === taskId);
  const at = proposedLines(mine.map((e) => e.hunk)).find((l) => line >= l.start && line <= l.end);
  return at === undefined ? undefined : mine.find((e) => e.hunk.id === at.hunkId);
}
