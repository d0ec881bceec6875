/**
 * Accept, reject and navigate hunks: which hunks a command means (its argument, else the
 * hunk under the cursor, else every reviewable hunk of the document) and the server call.
 * Dependencies are passed in, so the logic is tested without VS Code. Nothing here moves
 * focus: accept arrives as a `workspace/applyEdit`, which the editor can undo.
 */

import { HunkArgs } from "./protocol";
import { Entry, Reviews } from "./reviews";

export interface Cursor {
  uri: string;
  line: number;
}

export interface ReviewDeps {
  reviews: Reviews;
  cursor(): Cursor | undefined;
  /** Run a server command (`baton.accept` / `baton.reject`). */
  execute(command: string, args: HunkArgs): Promise<unknown>;
  /** Move the cursor of the editor already showing ``uri`` (never another editor). */
  reveal(uri: string, line: number): void;
  info(message: string): void;
}

function hunkArgs(value: unknown): HunkArgs | undefined {
  const arg: unknown = Array.isArray(value) ? value[0] : value;
  if (typeof arg !== "object" || arg === null) return undefined;
  const o = arg as Record<string, unknown>;
  if (typeof o.taskId !== "string" || o.taskId === "") return undefined;
  const out: HunkArgs = { taskId: o.taskId };
  if (Array.isArray(o.hunkIds)) out.hunkIds = o.hunkIds.filter((h): h is string => typeof h === "string");
  return out;
}

/** The hunks one command applies to, grouped per task; or a message saying why none. */
export function targets(
  reviews: Reviews,
  cursor: Cursor | undefined,
  scope: "hunk" | "all",
  arg?: unknown,
): HunkArgs[] | string {
  const given = hunkArgs(arg);
  if (given !== undefined) {
    // A lens or link drawn before the last update may name hunks decided since.
    const diff = reviews.task(given.taskId);
    if (diff === undefined || given.hunkIds === undefined) return [given];
    const pending = new Set(diff.files.flatMap((f) => f.hunks.filter((h) => h.state === "pending").map((h) => h.id)));
    const hunkIds = given.hunkIds.filter((h) => pending.has(h));
    if (hunkIds.length === 0) return "Baton: that hunk was already decided.";
    return [{ taskId: given.taskId, hunkIds }];
  }
  if (cursor === undefined) return "Baton: no editor is active.";
  if (scope === "hunk") {
    const e = reviews.at(cursor.uri, cursor.line);
    if (e === undefined) return "Baton: the cursor is not on a hunk (use Next Hunk).";
    return [{ taskId: e.taskId, hunkIds: [e.hunk.id] }];
  }
  const all = reviews.reviewable(cursor.uri);
  if (all.length === 0) return "Baton: this file has no hunk to review.";
  const byTask = new Map<string, string[]>();
  for (const e of all) byTask.set(e.taskId, [...(byTask.get(e.taskId) ?? []), e.hunk.id]);
  return [...byTask].map(([taskId, hunkIds]) => ({ taskId, hunkIds }));
}

export async function decide(
  deps: ReviewDeps,
  verb: "accept" | "reject",
  scope: "hunk" | "all",
  arg?: unknown,
): Promise<number> {
  const found = targets(deps.reviews, deps.cursor(), scope, arg);
  if (typeof found === "string") {
    deps.info(found);
    return 0;
  }
  const command = verb === "accept" ? "baton.accept" : "baton.reject";
  for (const t of found) await deps.execute(command, t);
  return found.length;
}

/** Move the cursor to the next or previous reviewable hunk; returns it. */
export function navigate(deps: ReviewDeps, direction: "next" | "previous"): Entry | undefined {
  const cursor = deps.cursor();
  if (cursor === undefined) return undefined;
  const e =
    direction === "next" ? deps.reviews.next(cursor.uri, cursor.line) : deps.reviews.previous(cursor.uri, cursor.line);
  if (e === undefined) {
    deps.info("Baton: this file has no hunk to review.");
    return undefined;
  }
  deps.reveal(cursor.uri, e.hunk.range.start.line);
  return e;
}
