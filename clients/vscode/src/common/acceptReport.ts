/**
 * What the user is told after an accept (pure): the conflicts, refusals and edits not applied
 * of the `baton.accept` answer, naming the task by its title, with buttons. The extension sends
 * `acceptReports: "inline"`, so the server shows no message of its own for them.
 *
 * And where the accepted text is: in the open document, which VS Code writes to disk only if
 * `files.autoSave` says so (see {@link savedNote}); the client says which.
 */

import { CONFLICT_CHOICES } from "./conflicts";

/** Buttons of an accept that left hunks pending. */
export const SHOW_DIFF = "Show diff";
export const INSPECT = "Inspect";

/** Buttons that resolve a conflict (keep mine, take theirs, merge, ask the agent to redo)
 * come first, before Show diff and Inspect. */
export const RESOLVE_ACTIONS: readonly string[] = CONFLICT_CHOICES;

export interface AcceptReport {
  message: string;
  /** Button labels, in order. */
  actions: string[];
  /** The hunks that conflict (for the resolve buttons). */
  conflicts: string[];
}

interface Listed {
  hunkId?: unknown;
  reason?: unknown;
}

function listed(value: unknown): Listed[] {
  return Array.isArray(value) ? value.filter((v): v is Listed => typeof v === "object" && v !== null) : [];
}

function hunks(n: number): string {
  return n === 1 ? "1 hunk" : `${n} hunks`;
}

/** The report of an accept's answer; undefined when every hunk asked for was applied. */
export function acceptReport(result: unknown, title: string): AcceptReport | undefined {
  const r = (typeof result === "object" && result !== null ? result : {}) as Record<string, unknown>;
  const conflicts = listed(r.conflicts);
  const refused = listed(r.refused);
  const notApplied = listed(r.notApplied);
  const parts: string[] = [];
  if (conflicts.length > 0) {
    parts.push(`${hunks(conflicts.length)} ${conflicts.length === 1 ? "conflicts" : "conflict"} with your edits and ${conflicts.length === 1 ? "stays" : "stay"} pending`);
  }
  if (refused.length > 0) parts.push(`${hunks(refused.length)} refused: ${String(refused[0]!.reason)}`);
  if (notApplied.length > 0) parts.push(`${hunks(notApplied.length)} not applied: ${String(notApplied[0]!.reason)}`);
  if (parts.length === 0) return undefined;
  const actions = [...(conflicts.length > 0 ? RESOLVE_ACTIONS : []), SHOW_DIFF, INSPECT];
  return {
    message: `Baton: "${title}": ${parts.join("; ")}.`,
    actions,
    conflicts: conflicts.map((c) => String(c.hunkId)),
  };
}

/** Where the accepted text is, by `files.autoSave`: the accept edits the open document
 * (undoable) and writes nothing itself, so with auto save off the file on disk keeps its old
 * text until the user saves; with it on, VS Code writes it (afterDelay: a moment later).
 * `names`: the documents the accept left with unsaved changes. */
export function savedNote(autoSave: string | undefined, names: readonly string[]): { line: string; unsaved: boolean } | undefined {
  if (names.length === 0) return undefined;
  const files = names.join(", ");
  if (autoSave === "afterDelay") return { line: `Baton: accepted into ${files}; auto save writes it to disk`, unsaved: false };
  const when = autoSave === "onFocusChange" || autoSave === "onWindowChange" ? `auto save (${autoSave}) writes it later` : "not on disk until you save";
  return { line: `Baton: accepted into ${files} — ${when}`, unsaved: true };
}
