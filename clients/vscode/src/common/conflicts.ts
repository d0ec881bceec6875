/**
 * A hunk that conflicts with the user's edits: the ways to settle it, offered as the
 * buttons of the accept's warning. "Keep mine", "Take theirs" and "Ask the agent" are
 * `baton.resolve` choices; the merge view is the client's own.
 */

export const KEEP_MINE = "Keep mine";
export const TAKE_THEIRS = "Take theirs";
export const MERGE_VIEW = "Merge view";
export const ASK_AGENT = "Ask the agent";

/** The buttons, in the order shown. */
export const CONFLICT_CHOICES = [KEEP_MINE, TAKE_THEIRS, MERGE_VIEW, ASK_AGENT];

/** The `baton.resolve` choice of a button, or undefined for the merge view (and others). */
export function resolveChoice(button: string | undefined): "mine" | "theirs" | "redo" | undefined {
  if (button === KEEP_MINE) return "mine";
  if (button === TAKE_THEIRS) return "theirs";
  if (button === ASK_AGENT) return "redo";
  return undefined;
}

/** The first hunk an accept's answer calls a conflict, or undefined. */
export function firstConflict(result: unknown): string | undefined {
  if (typeof result !== "object" || result === null) return undefined;
  const list = (result as { conflicts?: unknown }).conflicts;
  if (!Array.isArray(list)) return undefined;
  for (const c of list) {
    const id = typeof c === "object" && c !== null ? (c as { hunkId?: unknown }).hunkId : undefined;
    if (typeof id === "string") return id;
  }
  return undefined;
}

const DONE: Record<string, string> = {
  mine: "kept your lines (the hunk is rejected)",
  theirs: "took the agent's lines",
  redo: "asked the agent to redo the hunk against your text",
};

/** The log line of a `baton.resolve` answer. */
export function resolvedLine(taskId: string, choice: string, result: unknown, title?: string): string {
  const state = typeof result === "object" && result !== null ? (result as { state?: unknown }).state : undefined;
  const name = title ? `"${title}" (${taskId})` : taskId;
  const what = DONE[choice] ?? choice;
  return `Baton: ${name}: ${what}${typeof state === "string" ? `; now ${state}` : ""}`;
}
