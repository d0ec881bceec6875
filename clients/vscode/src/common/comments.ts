/**
 * Talk back from the diff (pure; no vscode import): which hunks take a comment thread, and
 * what `baton.revise` is sent when the user comments on one or rejects it with a reason.
 *
 * A thread sits on each hunk of a task in review (its range in the document the user has
 * now): a pending one, and also one already accepted or rejected — a comment on it is a
 * revision turn about those lines all the same. The comment goes to the task's agent as its next turn, with the hunk's id: the
 * server quotes the proposed lines and their file:lines in the prompt. The new result comes
 * back as a `baton/diff` whose hunks new since this review carry `revised`.
 */

import { Hunk, Range, ServerCommand, TaskDiff } from "./protocol";

/** Where a comment thread goes: one hunk (pending, accepted or rejected) of a task in review. */
export interface ThreadSpot {
  taskId: string;
  uri: string;
  hunkId: string;
  range: Range;
  revised: boolean;
  state: Hunk["state"];
}

/** The hunks a thread may be opened on: every hunk of a task in review, decided or not. */
export function threadSpots(diff: TaskDiff): ThreadSpot[] {
  if (!diff.final || diff.state !== "review") return [];
  const out: ThreadSpot[] = [];
  for (const f of diff.files) {
    for (const h of f.hunks) {
      out.push({
        taskId: diff.taskId,
        uri: f.uri,
        hunkId: h.id,
        range: h.range,
        revised: h.revised === true,
        state: h.state,
      });
    }
  }
  return out;
}

/** The thread's label: what the hunk proposes, and whether it is new since the last review. */
export function threadLabel(h: Pick<Hunk, "newText" | "revised">): string {
  const first = h.newText.split("\n")[0]?.trim() ?? "";
  return `${h.revised === true ? "Baton (revised)" : "Baton"}: ${first || "removes these lines"}`;
}

/** The `baton.revise` request for a comment (or, with `reject`, a rejection's reason). */
export function reviseRequest(
  spot: ThreadSpot,
  text: string,
  reject = false,
): { command: typeof ServerCommand.revise; args: Record<string, unknown> } | undefined {
  const said = text.trim();
  if (said === "") return undefined;
  const args: Record<string, unknown> = { taskId: spot.taskId, comments: [] };
  if (reject) {
    args.rejections = [{ hunkId: spot.hunkId, reason: said }];
  } else {
    const start = spot.range.start.line + 1;
    const end = Math.max(start, spot.range.end.line + (spot.range.end.character > 0 ? 1 : 0));
    args.comments = [{ uri: spot.uri, start, end, text: said, hunkId: spot.hunkId }];
  }
  return { command: ServerCommand.revise, args };
}

/** The spot of a hunk of a task in review (from the document's commentable entries). */
export function spotOf(entry: { taskId: string; final: boolean; file: { uri: string }; hunk: Hunk }): ThreadSpot | undefined {
  if (!entry.final) return undefined;
  return {
    taskId: entry.taskId,
    uri: entry.file.uri,
    hunkId: entry.hunk.id,
    range: entry.hunk.range,
    revised: entry.hunk.revised === true,
    state: entry.hunk.state,
  };
}

/** One kept result of a revised task's turn, as `baton.checkpoints` lists it. */
export interface Checkpoint {
  turn: number;
  commit: string | null;
  shown: boolean;
}

/** The turns a review can step back (or forward) to: kept, and not the one shown. */
export function otherTurns(value: unknown): Checkpoint[] {
  const turns = (value as { turns?: unknown } | undefined)?.turns;
  if (!Array.isArray(turns)) return [];
  return turns
    .filter((t): t is Checkpoint => typeof t === "object" && t !== null && typeof (t as Checkpoint).turn === "number")
    .filter((t) => !t.shown && typeof t.commit === "string");
}
