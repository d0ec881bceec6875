/** After an accept: the conflicts it left, as a warning naming the task's title with buttons,
 * and where the accepted text is (the editor, or the disk too) by `files.autoSave`. The
 * wording is planned in acceptReport.ts. */

import * as vscode from "vscode";

import { INSPECT, SHOW_DIFF, acceptReport, savedNote } from "./acceptReport";
import { uriKey } from "./reviews";
import { showInformationMessage, showWarningMessage, textDocuments } from "./vscodeapi";

export interface AcceptButtons {
  showDiff(): Promise<void>;
  inspect(): Promise<void>;
  /** Conflict-resolution buttons (see RESOLVE_ACTIONS): label → what it does. */
  resolve?(label: string, hunkIds: string[]): Promise<void>;
}

/** Say once per window that accepted text waits in the editor (auto save off). */
let toldUnsaved = false;

export function reportAccept(result: unknown, title: string, uris: readonly string[], buttons: AcceptButtons): void {
  const report = acceptReport(result, title);
  if (report !== undefined) {
    void showWarningMessage(report.message, ...report.actions).then(async (pick) => {
      if (pick === SHOW_DIFF) await buttons.showDiff();
      else if (pick === INSPECT) await buttons.inspect();
      else if (pick !== undefined) await buttons.resolve?.(pick, report.conflicts);
    });
  }
  const applied = (result as { applied?: unknown } | null)?.applied;
  if (!Array.isArray(applied) || applied.length === 0) return;
  const keys = new Set(uris.map(uriKey));
  const dirty = textDocuments().filter((d) => d.isDirty && keys.has(uriKey(d.uri.toString())));
  const note = savedNote(
    vscode.workspace.getConfiguration("files", dirty[0]?.uri).get<string>("autoSave"),
    dirty.map((d) => d.uri.path.split("/").pop() ?? d.uri.path),
  );
  if (note === undefined) return;
  vscode.window.setStatusBarMessage(`$(check) ${note.line}`, 8000);
  if (!note.unsaved || toldUnsaved) return;
  toldUnsaved = true;
  void showInformationMessage(`${note.line}. (files.autoSave is off: Baton changes the editor's text, and the file when you save.)`, "Save").then(async (pick) => {
    if (pick === "Save") for (const d of dirty) await d.save();
  });
}
