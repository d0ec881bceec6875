/**
 * The CodeLenses of a document from the pending hunks the server sent (pure): per hunk
 * "Accept | Reject", per file and task "Accept all | Reject all | Open diff", and a single
 * "working…" lens while the task's draft is still moving.
 *
 * A draft outlives its task's run by a moment: `baton/tasks` says "review" (or "needs input")
 * before the final `baton/diff` arrives (the server reads it after the state change). A draft
 * of a task that no longer works draws no "working…" lens (one that waits for a reply says
 * so), so no stale lens stands while the final ones come.
 *
 * A hunk the server marks as a conflict with the user's edits gets "Keep mine | Take theirs |
 * Merge view | Ask the agent to redo it" instead of "Accept | Reject". A hunk whose proposed
 * lines a ghost cannot show ("+ 2 more lines") also gets "Show N proposed lines" (peek.ts).
 */

import { Command } from "./constants";
import { splitLines } from "./inlineDiff";
import { needsLines } from "./proposedLines";
import { WORKING_STATES } from "./protocol";
import { Entry } from "./reviews";

export interface LensPlan {
  line: number;
  title: string;
  command: string;
  args: unknown[];
}

/** A hunk accept would call a conflict: said beforehand, with the four ways to settle it. */
function conflictLenses(line: number, taskId: string, hunkId: string, uri: string): LensPlan[] {
  const resolve = (title: string, choice: string): LensPlan => ({ line, title, command: Command.resolveHunk, args: [{ taskId, hunkId, choice }] });
  return [
    resolve("$(warning) Conflicts with your edits: Keep mine", "mine"),
    resolve("Take theirs", "theirs"),
    { line, title: "Merge view", command: Command.openDiff, args: [{ taskId, uri, merge: true }] },
    resolve("Ask the agent to redo it", "redo"),
  ];
}

/** `stateOf(taskId)`: the task's state as `baton/tasks` last said (undefined: not known). */
export function lensesFor(entries: readonly Entry[], uri: string, stateOf: (taskId: string) => string | undefined = () => undefined): LensPlan[] {
  const out: LensPlan[] = [];
  const byTask = new Map<string, Entry[]>();
  for (const e of entries) {
    const list = byTask.get(e.taskId) ?? [];
    list.push(e);
    byTask.set(e.taskId, list);
  }
  for (const [taskId, list] of byTask) {
    const first = list[0]!;
    const label = `Baton ▸ ${first.title || taskId}`;
    const top = Math.max(0, Math.min(...list.map((e) => e.hunk.range.start.line)));
    if (!first.final) {
      const state = stateOf(taskId);
      if (state === "needs_input") {
        out.push({ line: top, title: `$(question) ${label}: waits for your reply`, command: Command.reply, args: [{ taskId }] });
        continue;
      }
      if (state !== undefined && !WORKING_STATES.has(state)) continue; // its final diff is on its way
      out.push({
        line: top,
        title: `$(sync~spin) ${label}: working… (${list.length} hunk${list.length === 1 ? "" : "s"} so far)`,
        command: Command.showTasks,
        args: [],
      });
      continue;
    }
    const ids = list.map((e) => e.hunk.id);
    if (list.length > 1) {
      out.push({ line: 0, title: `${label}: Accept all (${ids.length})`, command: Command.acceptAll, args: [{ taskId, hunkIds: ids }] });
      out.push({ line: 0, title: "Reject all", command: Command.rejectAll, args: [{ taskId, hunkIds: ids }] });
    }
    out.push({ line: 0, title: list.length > 1 ? "Open diff" : `${label}: Open diff`, command: Command.openDiff, args: [{ taskId, uri }] });
    for (const e of list) {
      const args = [{ taskId, hunkIds: [e.hunk.id] }];
      const line = e.hunk.range.start.line;
      if (e.hunk.conflict) {
        out.push(...conflictLenses(line, taskId, e.hunk.id, uri));
        continue;
      }
      // "revised": new since the last review (the agent's answer to a comment)
      const title = e.hunk.stale ? "Accept (edited since)" : e.hunk.revised === true ? "Accept (revised)" : "Accept";
      out.push({ line, title, command: Command.acceptHunk, args });
      out.push({ line, title: "Reject", command: Command.rejectHunk, args });
      if (needsLines(e.hunk)) {
        const n = splitLines(e.hunk.newText).length;
        out.push({ line, title: `Show ${n} proposed line${n === 1 ? "" : "s"}`, command: Command.peekHunk, args: [{ taskId, hunkId: e.hunk.id, uri }] });
      }
    }
  }
  return out;
}

/**
 * Lines whose lenses changed are drawn anew, not relabelled (pure). VS Code keeps one lens
 * widget per line: given new lenses on a line it already shows, it keeps the old titles on
 * screen until its next resolve pass (a second or two later) — the "working…" lens of a draft
 * stood beside the final Accept lenses that way. So a line whose titles changed is left out
 * once (VS Code removes its widget), and the caller asks for the lenses again, which then
 * come as a new widget with its titles at once.
 */
export class LensStager {
  private readonly shown = new Map<string, Map<number, string>>();

  /** The lenses to give now, and whether to ask VS Code for them again soon. */
  stage(uri: string, plans: readonly LensPlan[]): { now: LensPlan[]; again: boolean } {
    const byLine = new Map<number, string>();
    for (const p of plans) byLine.set(p.line, [byLine.get(p.line), p.title].filter((t) => t !== undefined).join("\u0000"));
    const before = this.shown.get(uri) ?? new Map<number, string>();
    const changed = new Set([...byLine].filter(([line, titles]) => before.has(line) && before.get(line) !== titles).map(([line]) => line));
    const now = plans.filter((p) => !changed.has(p.line));
    const kept = new Map([...byLine].filter(([line]) => !changed.has(line)));
    if (kept.size > 0) this.shown.set(uri, kept);
    else this.shown.delete(uri);
    return { now, again: changed.size > 0 };
  }
}
