/** Shows the lenses planned by codeLens.ts ("Accept | Reject" per hunk, "Accept all | Reject
 * all | Open diff" per file) on every file document. */

import * as vscode from "vscode";

import { lensesFor } from "./codeLens";
import { Reviews } from "./reviews";

export class HunkLenses implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;

  /** `stateOf(taskId)`: the task's last known state (a draft's lens depends on it). */
  constructor(
    private readonly reviews: Reviews,
    private readonly stateOf: (taskId: string) => string | undefined = () => undefined,
  ) {}

  refresh(): void {
    this.changed.fire();
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const uri = document.uri.toString();
    const last = Math.max(0, document.lineCount - 1);
    return lensesFor(this.reviews.entries(uri), uri, this.stateOf).map(
      (l) =>
        new vscode.CodeLens(new vscode.Range(Math.min(l.line, last), 0, Math.min(l.line, last), 0), {
          title: l.title,
          command: l.command,
          arguments: l.args,
        }),
    );
  }

  dispose(): void {
    this.changed.dispose();
  }
}
