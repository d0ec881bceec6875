/**
 * The review beyond the file's inline lenses: a hunk's proposed lines shown as lines
 * (peek.ts); Accept / Reject inside the side-by-side diff (lenses over the proposal side,
 * which the peek shows too, and the diff editor's title bar); and Keep / Undo of one whole
 * file (fileDecisions.ts) from the title bars and the task view. Registered by the
 * extension's wiring in one call.
 */

import * as vscode from "vscode";

import { App, reviewDeps, run } from "./commands";
import { Command, PROPOSAL_SCHEME } from "./constants";
import { FileScope, fileTargets } from "./fileDecisions";
import { peekHunk } from "./peek";
import { hoverDiff } from "./inlineDiff";
import { hunkAtProposedLine, proposalLenses } from "./proposedLines";
import { readRef } from "./proposalView";
import { decide } from "./review";
import { activeTextEditor, registerCommand, showInformationMessage } from "./vscodeapi";

/** The lenses of the proposal documents (`baton-proposal:`), redrawn as they change, and
 * their hovers: over a hunk's proposed lines, the hunk with Accept · Reject links. VS Code
 * draws no CodeLens in a diff editor unless `diffEditor.codeLens` is on; the hover, the
 * context menu and the keys (Accept / Reject Hunk at the cursor) work there regardless. */
class ProposalDecisions implements vscode.CodeLensProvider, vscode.HoverProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;
  private readonly watch: vscode.Disposable;

  constructor(private readonly app: App) {
    this.watch = app.proposals.onDidChange(() => this.changed.fire());
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const ref = readRef(document.uri);
    if (ref === undefined) return [];
    const last = Math.max(0, document.lineCount - 1);
    return proposalLenses(this.app.reviews.entries(ref.uri), ref).map((l) => {
      const line = Math.min(l.line, last);
      return new vscode.CodeLens(new vscode.Range(line, 0, line, 0), { title: l.title, command: l.command, arguments: l.args });
    });
  }

  provideHover(document: vscode.TextDocument, position: vscode.Position): vscode.Hover | undefined {
    const ref = readRef(document.uri);
    if (ref === undefined || ref.merge === true) return undefined;
    const e = hunkAtProposedLine(this.app.reviews.entries(ref.uri), ref.taskId, position.line);
    if (e === undefined || !e.final) return undefined;
    const md = new vscode.MarkdownString(hoverDiff(e.hunk));
    const args = encodeURIComponent(JSON.stringify([{ taskId: e.taskId, hunkIds: [e.hunk.id] }]));
    md.appendMarkdown(`\n\n[Accept](command:${Command.acceptHunk}?${args}) · [Reject](command:${Command.rejectHunk}?${args})`);
    md.isTrusted = { enabledCommands: [Command.acceptHunk, Command.rejectHunk] };
    return new vscode.Hover(md);
  }

  dispose(): void {
    this.watch.dispose();
    this.changed.dispose();
  }
}

/** The file a Keep / Undo means: a proposal document's file and task, a file's URI (a title
 * bar passes the editor's), a {uri, taskId} (a lens, a task view's file), else the active
 * editor's. */
function scopeOf(arg: unknown): FileScope | undefined {
  const a: unknown = Array.isArray(arg) ? arg[0] : arg;
  const fromUri = (uri: vscode.Uri): FileScope | undefined => {
    if (uri.scheme === PROPOSAL_SCHEME) {
      const ref = readRef(uri);
      return ref === undefined ? undefined : { uri: ref.uri, taskId: ref.taskId };
    }
    return uri.scheme === "file" ? { uri: uri.toString() } : undefined;
  };
  if (a instanceof vscode.Uri) return fromUri(a);
  if (typeof a === "object" && a !== null) {
    const node = a as Record<string, unknown>;
    // a task view's file ({file: {uri, taskId}}), or the {uri, taskId} itself
    const o = typeof node.file === "object" && node.file !== null ? (node.file as Record<string, unknown>) : node;
    if (typeof o.uri === "string") return typeof o.taskId === "string" ? { uri: o.uri, taskId: o.taskId } : { uri: o.uri };
  }
  const editor = activeTextEditor();
  return editor === undefined ? undefined : fromUri(editor.document.uri);
}

async function decideFile(app: App, verb: "accept" | "reject", arg: unknown): Promise<void> {
  const scope = scopeOf(arg);
  const found = scope === undefined ? "Baton: no file to review here." : fileTargets(app.reviews, scope);
  if (typeof found === "string") {
    void showInformationMessage(found);
    return;
  }
  const deps = reviewDeps(app);
  for (const t of found) await decide(deps, verb, "all", t);
}

export function registerDiffReview(app: App): vscode.Disposable[] {
  const lenses = new ProposalDecisions(app);
  const cmd = (id: string, what: string, fn: (arg: unknown) => Promise<void>): vscode.Disposable =>
    registerCommand(id, (...args: unknown[]) => run(what, () => fn(args[0])));
  return [
    lenses,
    vscode.languages.registerCodeLensProvider({ scheme: PROPOSAL_SCHEME }, lenses),
    vscode.languages.registerHoverProvider({ scheme: PROPOSAL_SCHEME }, lenses),
    cmd(Command.peekHunk, "show proposed lines", (a) => peekHunk(app, a)),
    cmd(Command.acceptFile, "accept the file", (a) => decideFile(app, "accept", a)),
    cmd(Command.rejectFile, "reject the file", (a) => decideFile(app, "reject", a)),
  ];
}
