/**
 * "Show proposed lines": a hunk's proposed text as real lines, with the file's syntax
 * colours, in a peek that opens in the editor right under the lines it would replace. The
 * peek shows the task's read-only proposal document (`baton-proposal:`, the user's text with
 * the task's hunks applied, as Open Diff's right side) at the hunk's new lines, which it
 * highlights; the lines around them are the file's own. Nothing is written to the document
 * or to disk: the file changes only when the hunk is accepted. The peek's own lenses accept
 * or reject the hunk (proposalLenses.ts).
 */

import * as vscode from "vscode";

import type { App } from "./commands";
import { peekAnchor, proposedLines } from "./proposedLines";
import { proposalUri } from "./proposalView";
import { Entry, uriKey } from "./reviews";
import { activeTextEditor, executeCommand, showInformationMessage, visibleTextEditors } from "./vscodeapi";

/** The hunk a peek command means: its argument ({taskId, hunkId}), else the hunk under the
 * cursor, else the next one below it. */
function entryOf(app: App, arg: unknown): Entry | undefined {
  const a: unknown = Array.isArray(arg) ? arg[0] : arg;
  const o = typeof a === "object" && a !== null ? (a as Record<string, unknown>) : {};
  if (typeof o.taskId === "string" && typeof o.hunkId === "string") {
    const file = app.reviews.task(o.taskId)?.files.find((f) => f.hunks.some((h) => h.id === o.hunkId));
    return file === undefined ? undefined : app.reviews.entries(file.uri).find((e) => e.taskId === o.taskId && e.hunk.id === o.hunkId);
  }
  const editor = activeTextEditor();
  if (editor === undefined) return undefined;
  const uri = editor.document.uri.toString();
  const line = editor.selection.active.line;
  return app.reviews.at(uri, line) ?? app.reviews.next(uri, line);
}

export async function peekHunk(app: App, arg: unknown): Promise<void> {
  const entry = entryOf(app, arg);
  if (entry === undefined) {
    void showInformationMessage("Baton: no pending hunk to show here.");
    return;
  }
  const fileUri = vscode.Uri.parse(entry.file.uri);
  const shown = visibleTextEditors().find((e) => uriKey(e.document.uri.toString()) === uriKey(entry.file.uri));
  const editor = shown ?? (await vscode.window.showTextDocument(fileUri, { preview: false }));
  const hunks = app.reviews.entries(entry.file.uri).filter((e) => e.taskId === entry.taskId).map((e) => e.hunk);
  const lines = proposedLines(hunks).find((l) => l.hunkId === entry.hunk.id);
  if (lines === undefined) return;
  const target = new vscode.Location(
    proposalUri({ taskId: entry.taskId, uri: entry.file.uri }),
    new vscode.Range(lines.start, 0, lines.end, lines.endCharacter),
  );
  const anchor = new vscode.Position(Math.min(peekAnchor(entry.hunk), editor.document.lineCount - 1), 0);
  await executeCommand("editor.action.peekLocations", editor.document.uri, anchor, [target], "peek");
}
