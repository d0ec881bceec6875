/**
 * Undo and redo of accepted hunks, as decisions (pure; no vscode import).
 *
 * An accepted hunk is an edit of the document, so Ctrl+Z takes it out again; the server's
 * record must follow, or the task ends applied with none of its change in the file. This
 * remembers the accepted hunks of the diffs the server sends (applied tasks included) and,
 * when a document of theirs changes, says what to ask the server:
 *
 * - an accepted hunk whose old text is back in the document → `baton.reopen` (pending
 *   again: drawn again, reviewable again; an applied task is in review again);
 * - a hunk reopened that way whose new text is back (a redo) → `baton.reaccept`.
 *
 * The text search is only a cheap first look: the server reads the document and decides
 * only the hunks whose place holds that side, so a wrong guess costs one request and changes
 * nothing. The same request is never sent twice for the same document version.
 */

import { Hunk, ServerCommand, TaskDiff } from "./protocol";
import { uriKey } from "./reviews";

/** States whose accepted hunks an undo can take back. */
const DECIDED: ReadonlySet<string> = new Set(["review", "applied"]);

interface Watched {
  /** URI key → that file's line hunks, as the last diff sent them. */
  files: Map<string, Hunk[]>;
  /** Hunk ids seen accepted: a redo may accept them again. */
  accepted: Set<string>;
}

/** One request for the server: `baton.reopen` or `baton.reaccept` with its arguments. */
export interface Redecision {
  command: typeof ServerCommand.reopen | typeof ServerCommand.reaccept;
  args: { taskId: string; hunkIds: string[] };
}

function lf(text: string): string {
  return text.replace(/\r\n/g, "\n");
}

/** Could ``text`` hold ``side`` of a hunk (and not ``other``, for an empty side)? */
function mayHold(text: string, side: string, other: string): boolean {
  if (side !== "") return text.includes(side);
  return other !== "" && !text.includes(other);
}

export class UndoWatch {
  private readonly tasks = new Map<string, Watched>();
  private readonly busy = new Set<string>();
  private readonly asked = new Map<string, string>();

  /** Take a `baton/diff`; the URI keys of its documents to look at, if it is watched. */
  update(diff: TaskDiff): string[] {
    if (!diff.final || !DECIDED.has(diff.state)) {
      this.tasks.delete(diff.taskId); // working again, or settled otherwise
      return [];
    }
    const accepted = this.tasks.get(diff.taskId)?.accepted ?? new Set<string>();
    const files = new Map<string, Hunk[]>();
    for (const f of diff.files) {
      if (f.binary) continue;
      const hunks = f.hunks.filter((h) => !h.wholeFile);
      for (const h of hunks) if (h.state === "accepted") accepted.add(h.id);
      files.set(uriKey(f.uri), hunks);
    }
    const any = [...files.values()].some((hs) => hs.some((h) => accepted.has(h.id)));
    if (!any) {
      this.tasks.delete(diff.taskId);
      return [];
    }
    this.tasks.set(diff.taskId, { files, accepted });
    return [...files.keys()];
  }

  /** Anything watched at all (a cheap test before reading a document's text). */
  watching(uri: string): boolean {
    const key = uriKey(uri);
    return [...this.tasks.values()].some((w) => w.files.has(key));
  }

  /**
   * The requests a document's text calls for (one per task at most; none for a task with
   * a request under way, or one already sent for this version). Marks them under way.
   */
  check(uri: string, version: number, text: string): Redecision[] {
    const key = uriKey(uri);
    const body = lf(text);
    const out: Redecision[] = [];
    for (const [taskId, w] of this.tasks) {
      const hunks = w.files.get(key);
      if (hunks === undefined || this.busy.has(taskId)) continue;
      const reopen: string[] = [];
      const reaccept: string[] = [];
      for (const h of hunks) {
        const oldText = lf(h.oldText);
        const newText = lf(h.newText);
        if (h.state === "accepted" && mayHold(body, oldText, newText)) reopen.push(h.id);
        else if (h.state === "pending" && w.accepted.has(h.id) && mayHold(body, newText, oldText)) reaccept.push(h.id);
      }
      const [command, hunkIds] =
        reopen.length > 0 ? [ServerCommand.reopen, reopen] : [ServerCommand.reaccept, reaccept];
      if (hunkIds.length === 0) continue;
      const request = [version, command, ...hunkIds].join(" ");
      const where = `${taskId} ${key}`;
      if (this.asked.get(where) === request) continue;
      this.asked.set(where, request);
      this.busy.add(taskId);
      out.push({ command, args: { taskId, hunkIds } });
    }
    return out;
  }

  /** A request for the task was answered (or failed). */
  done(taskId: string): void {
    this.busy.delete(taskId);
  }

  clear(): void {
    this.tasks.clear();
    this.busy.clear();
    this.asked.clear();
  }
}
