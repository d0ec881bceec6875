/**
 * Reviews: the latest diff of every task the server told us about, indexed by document, and
 * what the editor shows for it (pure; no vscode import). Hunk ranges follow the user's edits
 * until the server sends a fresh placement.
 */

import { FileDiff, Hunk, Position, Range, TaskDiff } from "./protocol";

/** Task states whose diff is shown (a draft while working, the final one in review). */
const SHOWN_STATES: ReadonlySet<string> = new Set([
  "preparing",
  "running",
  "verifying",
  "needs_input",
  "review",
]);

/** A pending hunk of one file of one task. */
export interface Entry {
  taskId: string;
  title: string;
  final: boolean;
  file: FileDiff;
  hunk: Hunk;
}

/** One change of a document, as VS Code reports it (range in the text before the change). */
export interface TextChange {
  range: Range;
  text: string;
}

/** A key under which two spellings of one file URI meet (percent-encoding differs). */
export function uriKey(uri: string): string {
  let out = uri;
  try {
    out = decodeURIComponent(uri);
  } catch {
    // a stray % — keep it as is
  }
  return out.replace(/^file:\/\/\/([A-Za-z]):/, (_m, d: string) => `file:///${d.toLowerCase()}:`);
}

/** Whether a hunk's range covers ``line`` (an end at column 0 does not cover its line). */
function covers(hunk: Hunk, line: number): boolean {
  const { start, end } = hunk.range;
  const last = end.line > start.line && end.character === 0 ? end.line - 1 : end.line;
  return line >= start.line && line <= last;
}

export class Reviews {
  private readonly tasks = new Map<string, TaskDiff>();

  /** Take a `baton/diff`; returns the keys of the documents whose hunks changed. */
  update(diff: TaskDiff): Set<string> {
    const touched = this.keysOf(diff.taskId);
    if (SHOWN_STATES.has(diff.state) && diff.files.some((f) => f.hunks.length > 0)) {
      this.tasks.set(diff.taskId, diff);
    } else {
      this.tasks.delete(diff.taskId);
    }
    for (const k of this.keysOf(diff.taskId)) touched.add(k);
    return touched;
  }

  /** Forget a task (e.g. it was cancelled); returns the keys of its documents. */
  remove(taskId: string): Set<string> {
    const touched = this.keysOf(taskId);
    this.tasks.delete(taskId);
    return touched;
  }

  clear(): void {
    this.tasks.clear();
  }

  task(taskId: string): TaskDiff | undefined {
    return this.tasks.get(taskId);
  }

  taskIds(): string[] {
    return [...this.tasks.keys()];
  }

  private keysOf(taskId: string): Set<string> {
    const out = new Set<string>();
    for (const f of this.tasks.get(taskId)?.files ?? []) out.add(uriKey(f.uri));
    return out;
  }

  /** Every document (URI key) with pending hunks. */
  documents(): Set<string> {
    const out = new Set<string>();
    for (const diff of this.tasks.values()) {
      for (const f of diff.files) {
        if (f.hunks.some((h) => h.state === "pending")) out.add(uriKey(f.uri));
      }
    }
    return out;
  }

  /** The pending hunks of a document, in document order. */
  entries(uri: string): Entry[] {
    return this.hunksOf(uri, (_diff, hunk) => hunk.state === "pending");
  }

  /**
   * Every hunk of a document of a final diff in review, decided or not, in document order:
   * a comment may be on an accepted or rejected hunk too (a revision turn about it).
   */
  commentable(uri: string): Entry[] {
    return this.hunksOf(uri, (diff) => diff.final && diff.state === "review");
  }

  /** The hunk of a task in review under ``line`` a comment would be on, else none. */
  commentableAt(uri: string, line: number): Entry | undefined {
    const under = this.commentable(uri).filter((e) => covers(e.hunk, line));
    return under.find((e) => e.hunk.state === "pending") ?? under[0];
  }

  private hunksOf(uri: string, wanted: (diff: TaskDiff, hunk: Hunk) => boolean): Entry[] {
    const key = uriKey(uri);
    const out: Entry[] = [];
    for (const diff of this.tasks.values()) {
      for (const file of diff.files) {
        if (uriKey(file.uri) !== key || file.binary) continue;
        for (const hunk of file.hunks) {
          if (wanted(diff, hunk)) {
            out.push({ taskId: diff.taskId, title: diff.title, final: diff.final, file, hunk });
          }
        }
      }
    }
    out.sort(
      (a, b) =>
        a.hunk.range.start.line - b.hunk.range.start.line ||
        a.hunk.range.start.character - b.hunk.range.start.character,
    );
    return out;
  }

  /** The final (reviewable) pending hunks of a document. */
  reviewable(uri: string): Entry[] {
    return this.entries(uri).filter((e) => e.final);
  }

  /** The reviewable hunk under ``line``, else none. */
  at(uri: string, line: number): Entry | undefined {
    return this.reviewable(uri).find((e) => covers(e.hunk, line));
  }

  /** The hunk under ``line``, else the next one below it (wrapping round). */
  next(uri: string, line: number): Entry | undefined {
    const all = this.reviewable(uri);
    return all.find((e) => e.hunk.range.start.line > line) ?? all[0];
  }

  /** The nearest hunk above ``line`` (wrapping round). */
  previous(uri: string, line: number): Entry | undefined {
    const all = this.reviewable(uri);
    const above = all.filter((e) => e.hunk.range.start.line < line);
    return above[above.length - 1] ?? all[all.length - 1];
  }

  /**
   * Move the hunks of a document after the user's edits (VS Code's changes, applied in the
   * order given). Hunks below an edit shift; a hunk an edit touches is marked stale.
   * Returns true when something moved.
   */
  shift(uri: string, changes: readonly TextChange[]): boolean {
    const key = uriKey(uri);
    let moved = false;
    for (const diff of this.tasks.values()) {
      for (const file of diff.files) {
        if (uriKey(file.uri) !== key) continue;
        for (const change of changes) {
          for (const hunk of file.hunks) moved = shiftHunk(hunk, change) || moved;
        }
      }
    }
    return moved;
  }
}

function cmp(a: Position, b: Position): number {
  return a.line - b.line || a.character - b.character;
}

/** Move one hunk after one change; true when its range or staleness changed. */
export function shiftHunk(hunk: Hunk, change: TextChange): boolean {
  const delta = change.text.split("\n").length - 1 - (change.range.end.line - change.range.start.line);
  const { start, end } = hunk.range;
  if (cmp(change.range.end, start) <= 0) {
    // Above the hunk (or ending where it starts): the hunk moves by the lines added.
    if (delta === 0) return false;
    hunk.range = {
      start: { line: start.line + delta, character: start.character },
      end: { line: end.line + delta, character: end.character },
    };
    return true;
  }
  if (cmp(change.range.start, end) >= 0) return false; // below the hunk
  // The user edited the hunk's own lines: it stays, marked stale, its end following the edit.
  hunk.range = { start, end: { line: Math.max(start.line, end.line + delta), character: end.character } };
  hunk.stale = true;
  return true;
}
