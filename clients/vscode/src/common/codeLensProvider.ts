/** Shows the lenses planned by codeLens.ts ("Accept | Reject" per hunk, "Accept all | Reject
 * all | Open diff" per file) on every file document; a line whose lenses changed is drawn
 * anew (LensStager), so VS Code never shows its old titles beside the new ones. */

import * as vscode from "vscode";

import { LensStager, lensesFor } from "./codeLens";
import { Reviews } from "./reviews";

export class HunkLenses implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;
  private readonly stager = new LensStager();
  private again: ReturnType<typeof setTimeout> | undefined;

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
    const { now, again } = this.stager.stage(uri, lensesFor(this.reviews.entries(uri), uri, this.stateOf));
    if (again && this.again === undefined) {
      this.again = setTimeout(() => {
        this.again = undefined;
        this.changed.fire();
      }, 50);
    }
    return now.map(
      (l) =>
        new vscode.CodeLens(new vscode.Range(Math.min(l.line, last), 0, Math.min(l.line, last), 0), {
          title: l.title,
          command: l.command,
          arguments: l.args,
        }),
    );
  }

  dispose(): void {
    clearTimeout(this.again);
    this.changed.dispose();
  }
}
