/**
 * "Open Diff": VS Code's diff editor between the real document (left, still editable) and a
 * read-only virtual document holding the task's proposal (right), served under the
 * `baton-proposal:` scheme and refreshed as the task's diff changes.
 */

import * as vscode from "vscode";

import { PROPOSAL_SCHEME } from "./constants";
import { applyHunks } from "./proposal";
import { hunkAtProposedLine } from "./proposedLines";
import { Reviews, uriKey } from "./reviews";
import { executeCommand, textDocuments } from "./vscodeapi";

export interface ProposalRef {
  taskId: string;
  uri: string;
  /** A merge view: the agent's whole version of the file as the server has it (its hunks
   * applied to the snapshot), not the hunks placed over the user's current text. */
  merge?: boolean;
}

export function proposalUri(ref: ProposalRef): vscode.Uri {
  const file = vscode.Uri.parse(ref.uri);
  return vscode.Uri.from({ scheme: PROPOSAL_SCHEME, path: file.path, query: JSON.stringify(ref) });
}

export function readRef(uri: vscode.Uri): ProposalRef | undefined {
  try {
    const o = JSON.parse(uri.query) as Partial<ProposalRef>;
    if (typeof o.taskId !== "string" || typeof o.uri !== "string") return undefined;
    return o.merge === true ? { taskId: o.taskId, uri: o.uri, merge: true } : { taskId: o.taskId, uri: o.uri };
  } catch {
    return undefined;
  }
}

/** Where a cursor on a proposal document stands in its file: the start of the hunk whose
 * proposed lines it is on (the line after the hunk when it is on none); undefined for any
 * other document. Accept / Reject Hunk from a proposal then mean that hunk. */
export function proposalCursor(reviews: Reviews, uri: vscode.Uri, line: number): { uri: string; line: number } | undefined {
  if (uri.scheme !== PROPOSAL_SCHEME) return undefined;
  const ref = readRef(uri);
  if (ref === undefined || ref.merge === true) return undefined;
  const e = hunkAtProposedLine(reviews.entries(ref.uri), ref.taskId, line);
  return { uri: ref.uri, line: e === undefined ? -1 : e.hunk.range.start.line };
}

export class ProposalView implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly open = new Map<string, vscode.Uri>();

  /** The agent's version of a file (`baton.proposed`), for merge views; set once the
   * server exists. */
  agentText: ((taskId: string, uri: string) => Promise<string>) | undefined;

  constructor(private readonly reviews: Reviews) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const ref = readRef(uri);
    if (ref === undefined) return "";
    this.open.set(uri.toString(), uri);
    if (ref.merge === true && this.agentText !== undefined) {
      try {
        return await this.agentText(ref.taskId, ref.uri);
      } catch {
        return "";
      }
    }
    const key = uriKey(ref.uri);
    const doc = textDocuments().find((d) => uriKey(d.uri.toString()) === key);
    let text: string;
    if (doc !== undefined) text = doc.getText();
    else {
      try {
        text = new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.parse(ref.uri)));
      } catch {
        text = "";
      }
    }
    const hunks = this.reviews.entries(ref.uri).filter((e) => e.taskId === ref.taskId).map((e) => e.hunk);
    return applyHunks(text, hunks);
  }

  /** Re-read the open proposals (their task's diff changed). */
  refresh(): void {
    for (const uri of this.open.values()) this.changed.fire(uri);
  }

  async show(ref: ProposalRef): Promise<void> {
    const file = vscode.Uri.parse(ref.uri);
    const name = file.path.split("/").pop() ?? file.path;
    const title = this.reviews.task(ref.taskId)?.title ?? ref.taskId;
    // Not a preview: a preview editor would replace the file's own preview tab and close it.
    const label = ref.merge === true ? `${name} ↔ Baton: ${title} (merge: the agent's version, read-only)` : `${name} ↔ Baton: ${title}`;
    await executeCommand("vscode.diff", file, proposalUri(ref), label, { preview: false });
  }

  dispose(): void {
    this.changed.dispose();
  }
}
