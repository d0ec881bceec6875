/**
 * What the editor draws for a pending hunk (pure): the lines it would remove, and the text it
 * would add shown after those lines. VS Code gives extensions no virtual lines, so each added
 * line is paired with a removed one as ghost text; lines beyond those are not squashed onto
 * one line: the last ghost says how many more there are, and the hunk's "Show proposed lines"
 * lens peeks at them as real lines (peek.ts). The proposal never enters the document until it
 * is accepted.
 */

import { Hunk } from "./protocol";

export const GHOST_LIMIT = 120;

/** Ghost text shown at the end of one line. */
export interface Ghost {
  line: number;
  text: string;
}

export interface HunkPaint {
  /** Whole lines the hunk would replace or delete. */
  removed: number[];
  /** The proposed text, as ghosts after lines. */
  added: Ghost[];
  /** Markdown shown on hover: the hunk as a unified diff. */
  hover: string;
}

/** Lines of a text, without the empty piece after a final newline. */
export function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n").map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l));
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

function clip(text: string): string {
  return text.length > GHOST_LIMIT ? text.slice(0, GHOST_LIMIT - 1) + "…" : text;
}

/** The lines a range covers (an end at column 0 does not cover its line). */
export function coveredLines(hunk: Hunk): number[] {
  const { start, end } = hunk.range;
  const last = end.character === 0 ? end.line - 1 : end.line;
  const out: number[] = [];
  for (let l = start.line; l <= last; l++) out.push(l);
  return out;
}

export function paint(hunk: Hunk): HunkPaint {
  const removed = coveredLines(hunk);
  const news = splitLines(hunk.newText);
  const added: Ghost[] = [];
  removed.forEach((line, i) => {
    const n = news[i];
    added.push({ line, text: n === undefined ? "⊖ (removed)" : "→ " + clip(n.trimStart()) });
  });
  const rest = news.slice(removed.length);
  if (rest.length === 1 && removed.length === 0) {
    added.push({ line: Math.max(0, hunk.range.start.line - 1), text: "+ " + clip(rest[0]!.trim()) });
  } else if (rest.length > 0) {
    const anchor = removed.length > 0 ? removed[removed.length - 1]! : Math.max(0, hunk.range.start.line - 1);
    const text = `+ ${rest.length} more line${rest.length === 1 ? "" : "s"}`;
    const same = added.find((g) => g.line === anchor);
    if (same) same.text += "   " + text;
    else added.push({ line: anchor, text: removed.length === 0 ? `+ ${rest.length} new lines` : text });
  }
  return { removed, added, hover: hoverDiff(hunk) };
}

function fence(text: string): string {
  let ticks = "```";
  while (text.includes(ticks)) ticks += "`";
  return ticks;
}

export function hoverDiff(hunk: Hunk): string {
  const body = [
    ...splitLines(hunk.oldText).map((l) => "-" + l),
    ...splitLines(hunk.newText).map((l) => "+" + l),
  ].join("\n");
  const f = fence(body);
  return `${f}diff\n${body}\n${f}`;
}
