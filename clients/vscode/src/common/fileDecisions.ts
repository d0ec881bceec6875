/**
 * Keep or undo one file (pure): accept, or reject, every reviewable hunk of one document at
 * once, from the editor's title bar, the diff editor's or a file of a task in the task view.
 * A file and a task mean that task's hunks in the file; a file alone means the hunks of every
 * task in it. Hunks a task is still drafting are not decided.
 */

import { HunkArgs } from "./protocol";
import { Reviews } from "./reviews";

/** One file, and the task whose hunks are meant (undefined: every task's). */
export interface FileScope {
  uri: string;
  taskId?: string;
}

/** The server calls (one per task) that decide every reviewable hunk of ``scope``, or a
 * message saying why there is none. */
export function fileTargets(reviews: Reviews, scope: FileScope): HunkArgs[] | string {
  const byTask = new Map<string, string[]>();
  for (const e of reviews.reviewable(scope.uri)) {
    if (scope.taskId !== undefined && e.taskId !== scope.taskId) continue;
    byTask.set(e.taskId, [...(byTask.get(e.taskId) ?? []), e.hunk.id]);
  }
  if (byTask.size === 0) return "Baton: this file has no hunk to review.";
  return [...byTask].map(([taskId, hunkIds]) => ({ taskId, hunkIds }));
}

/** The files of a task with hunks to review, in the order of its diff, with their count. */
export function reviewableFiles(reviews: Reviews, taskId: string): { uri: string; path: string; pending: number }[] {
  const diff = reviews.task(taskId);
  if (diff === undefined || !diff.final) return [];
  return diff.files
    .filter((f) => !f.binary)
    .map((f) => ({ uri: f.uri, path: f.path, pending: f.hunks.filter((h) => h.state === "pending").length }))
    .filter((f) => f.pending > 0);
}
