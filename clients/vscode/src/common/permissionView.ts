/**
 * The VS Code side of the permission prompts: notifications with the options as buttons, and
 * "Show details" as a read-only virtual document (`baton-permission:`) holding the preview —
 * a diff for a file change (shown with the diff language), a command line otherwise. When
 * the request is answered or cancelled its document's tabs are closed.
 */

import * as vscode from "vscode";

import { PERMISSION_SCHEME } from "./constants";
import { traceError } from "./log";
import { PermissionChooser } from "./permissionCommand";
import { PermissionUi, detailsText } from "./permissions";
import { PermissionRequest } from "./protocol";
import { showErrorMessage, showInformationMessage, showQuickPick } from "./vscodeapi";

export function permissionUri(p: PermissionRequest): vscode.Uri {
  const name = `${p.taskId}-${p.id}.${p.kind === "edit" ? "diff" : "txt"}`.replace(/[^\w.-]/g, "_");
  return vscode.Uri.from({ scheme: PERMISSION_SCHEME, path: `/${name}`, query: JSON.stringify({ taskId: p.taskId, id: p.id }) });
}

export class PermissionView implements vscode.TextDocumentContentProvider, PermissionUi, PermissionChooser, vscode.Disposable {
  private readonly texts = new Map<string, string>();

  constructor(private readonly onChanged: () => void) {}

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "This permission request is no longer pending.\n";
  }

  notify(message: string, buttons: string[]): Thenable<string | undefined> {
    return vscode.window.showWarningMessage(message, ...buttons);
  }

  async showDetails(p: PermissionRequest): Promise<void> {
    const uri = permissionUri(p);
    this.texts.set(uri.toString(), detailsText(p));
    let doc = await vscode.workspace.openTextDocument(uri);
    if (p.kind === "edit") doc = await vscode.languages.setTextDocumentLanguage(doc, "diff");
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  closeDetails(p: PermissionRequest): void {
    const uri = permissionUri(p).toString();
    this.texts.delete(uri);
    const tabs = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === uri);
    if (tabs.length > 0) void vscode.window.tabGroups.close(tabs);
  }

  changed(): void {
    this.onChanged();
  }

  inform(message: string): void {
    void showInformationMessage(message);
  }

  pick<T extends { label: string; description?: string }>(items: T[], placeHolder: string): Thenable<T | undefined> {
    return showQuickPick(items, { placeHolder });
  }

  /** An answer could not be sent: the log and an error message say why. */
  answerFailed(err: unknown): void {
    traceError("could not answer the permission request:", err);
    void showErrorMessage(`Baton: ${err instanceof Error ? err.message : String(err)}`);
  }

  dispose(): void {
    this.texts.clear();
  }
}
