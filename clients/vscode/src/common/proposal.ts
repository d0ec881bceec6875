/** The text a task proposes for a document: its pending hunks applied to the current text
 * (pure). "Open Diff" shows it beside the real document. */

import { Hunk, Position } from "./protocol";

/** The offset of an LSP position in ``text`` (lines end at \n; a \r before it is kept). */
export function offsetAt(text: string, pos: Position): number {
  let offset = 0;
  for (let line = 0; line < pos.line; line++) {
    const nl = text.indexOf("\n", offset);
    if (nl < 0) return text.length;
    offset = nl + 1;
  }
  const eol = text.indexOf("\n", offset);
  const lineEnd = eol < 0 ? text.length : eol;
  return Math.min(offset + Math.max(0, pos.character), lineEnd);
}

/** ``text`` with each hunk's range replaced by its new text (hunks must not overlap). */
export function applyHunks(text: string, hunks: readonly Hunk[]): string {
  const spans = hunks
    .map((h) => ({ from: offsetAt(text, h.range.start), to: offsetAt(text, h.range.end), text: h.newText }))
    .sort((a, b) => b.from - a.from);
  let out = text;
  let limit = Infinity;
  for (const s of spans) {
    if (s.to > limit) continue; // overlaps one already applied: skip rather than garble
    out = out.slice(0, s.from) + s.text + out.slice(s.to);
    limit = s.from;
  }
  return out;
}
