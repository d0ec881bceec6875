/** Builders for the unit tests: diffs and tasks shaped like the server's payloads. */

import { FileDiff, Hunk, TaskDiff, TaskSummary } from "../../src/common/protocol";

export const URI = "file:///repo/app.py";

export function hunk(id: string, line: number, oldText: string, newText: string, state = "pending"): Hunk {
  const lines = oldText === "" ? 0 : oldText.split("\n").length - 1;
  return {
    id,
    range: { start: { line, character: 0 }, end: { line: line + lines, character: 0 } },
    oldText,
    newText,
    state,
    stale: false,
    conflict: false,
    wholeFile: false,
  };
}

export function file(hunks: Hunk[], uri = URI): FileDiff {
  return { uri, path: uri.split("/").pop()!, oldPath: null, status: "modified", binary: false, version: 1, hunks };
}

export function diff(taskId: string, files: FileDiff[], state = "review", final = true): TaskDiff {
  return { taskId, title: `task ${taskId}`, state, final, files };
}

export function task(id: string, state: string, updatedAt = 1, message = ""): TaskSummary {
  return {
    id,
    title: `task ${id}`,
    state,
    action: "delegate",
    worker: "fake",
    model: null,
    root: "/repo",
    message,
    summary: "",
    updatedAt,
    createdAt: 0,
    next: [],
    proposedBy: null,
  };
}

/** A Claude Code proposal, as the server summarizes it (its `next` has no reply or retry). */
export function proposal(id: string, state: string, updatedAt = 1): TaskSummary {
  const next: Record<string, string[]> = { review: ["diff", "accept", "reject"], cancelled: ["inspect"], applied: ["inspect"] };
  return {
    ...task(id, state, updatedAt),
    title: "Claude Code: edit app.py",
    worker: "claude-code",
    next: next[state] ?? [],
    proposedBy: "claude-code",
  };
}

/** The two-hunk diff of the end-to-end flows: return 1 → 10 (line 1), return 2 → 20 (line 5). */
export function twoHunks(state = "review", final = true): TaskDiff {
  return diff("t1", [file([hunk("h1", 1, "    return 1\n", "    return 10\n"), hunk("h2", 5, "    return 2\n", "    return 20\n")])], state, final);
}
