/**
 * The CodeLenses of a document from the pending hunks the server sent (pure): per hunk
 * "Accept | Reject", per file and task "Accept all | Reject all | Open diff", and a single
 * "working…" lens while the task's draft is still moving.
 */

import { Command } from "./constants";
import { Entry } from "./reviews";

export interface LensPlan {
  line: number;
  title: string;
  command: string;
  args: unknown[];
}

export function lensesFor(entries: readonly Entry[], uri: string): LensPlan[] {
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
      // "revised": new since the last review (the agent's answer to a comment)
      const title = e.hunk.stale ? "Accept (edited since)" : e.hunk.revised === true ? "Accept (revised)" : "Accept";
      out.push({ line, title, command: Command.acceptHunk, args });
      out.push({ line, title: "Reject", command: Command.rejectHunk, args });
    }
  }
  return out;
}
