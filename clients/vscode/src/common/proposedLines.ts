/**
 * Where a task's proposed lines stand in its proposal document (pure): the `baton-proposal:`
 * document is the user's current text with the task's pending hunks applied (proposal.ts),
 * so each hunk's new lines sit at its own start line moved by what the hunks above it added
 * or removed. The peek under a hunk and the lenses of the proposal side use these lines.
 */

import { splitLines } from "./inlineDiff";
import { Hunk } from "./protocol";

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
