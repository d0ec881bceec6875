/**
 * The inline diff drawn from `baton/diff`: lines a hunk would replace get a "removed"
 * background, and the proposed text trails them as ghost text; a draft (task still working)
 * is drawn fainter. Hovering a hunk shows it as a diff with Accept / Reject links (and who
 * proposed it, for a proposal). Nothing here opens an editor or moves focus. A proposal's
 * decorations go as soon as it is applied, before its proposer writes the file, so VS Code's
 * own reload of the (clean) document is all that is left to see.
 */

import * as vscode from "vscode";

import { Command, CONTEXT_HAS_HUNKS, PROPOSAL_SCHEME } from "./constants";
import { paint, splitLines } from "./inlineDiff";
import { needsLines } from "./proposedLines";
import { readRef } from "./proposalView";
import { Reviews, uriKey } from "./reviews";
import { setContext, visibleTextEditors } from "./vscodeapi";

function kinds(draft: boolean): { removed: vscode.TextEditorDecorationType; added: vscode.TextEditorDecorationType } {
  const removed = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor("diffEditor.removedLineBackground"),
    overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.deletedForeground"),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
    opacity: draft ? "0.7" : undefined,
    border: draft ? "1px dashed" : undefined,
    borderColor: draft ? new vscode.ThemeColor("diffEditor.removedTextBorder") : undefined,
  });
  const added = vscode.window.createTextEditorDecorationType({
    after: {
      color: new vscode.ThemeColor("gitDecoration.addedResourceForeground"),
      backgroundColor: new vscode.ThemeColor("diffEditor.insertedTextBackground"),
      margin: "0 0 0 2em",
      fontStyle: draft ? "italic" : "normal",
    },
    overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.addedForeground"),
    overviewRulerLane: vscode.OverviewRulerLane.Right,
  });
  return { removed, added };
}

/** ``lines``: how many lines the hunk proposes, when a peek shows them better (else 0). */
function hover(markdown: string, taskId: string, hunkId: string, final: boolean, by: string | undefined, lines = 0): vscode.MarkdownString {
  const md = new vscode.MarkdownString(markdown);
  if (by !== undefined) {
    md.appendMarkdown(`\n\n*Proposed by ${by}: it writes the file once every hunk is decided.*`);
  }
  if (final) {
    const args = encodeURIComponent(JSON.stringify([{ taskId, hunkIds: [hunkId] }]));
    const peek = encodeURIComponent(JSON.stringify([{ taskId, hunkId }]));
    const show = lines > 0 ? ` · [Show ${lines} proposed lines](command:${Command.peekHunk}?${peek})` : "";
    md.appendMarkdown(
      `\n\n[Accept](command:${Command.acceptHunk}?${args}) · [Reject](command:${Command.rejectHunk}?${args})${show}`,
    );
    md.isTrusted = { enabledCommands: [Command.acceptHunk, Command.rejectHunk, Command.peekHunk] };
  } else {
    md.appendMarkdown("\n\n*Draft: the task is still working.*");
  }
  return md;
}

/** Whether ``editor`` is the left side of a diff whose right side is a proposal (Open Diff):
 * its group shows that diff, and the diff's left side is this editor's document. */
function leftOfProposalDiff(editor: vscode.TextEditor): boolean {
  const key = uriKey(editor.document.uri.toString());
  return vscode.window.tabGroups.all.some((g) => {
    const input = g.activeTab?.input;
    return (
      // a diff's own sides may have no column of their own
      (editor.viewColumn === undefined || g.viewColumn === editor.viewColumn) &&
      input instanceof vscode.TabInputTextDiff &&
      input.modified.scheme === PROPOSAL_SCHEME &&
      uriKey(input.original.toString()) === key
    );
  });
}

export class InlineDecorations implements vscode.Disposable {
  private readonly final = kinds(false);
  private readonly draft = kinds(true);
  private readonly disposables: vscode.Disposable[] = [];
  private hasHunks: boolean | undefined;

  constructor(
    private readonly reviews: Reviews,
    private readonly enabled: () => boolean,
    /** Who proposed a task ("Claude Code"), undefined for Baton's own tasks. */
    private readonly proposer: (taskId: string) => string | undefined = () => undefined,
  ) {
    this.disposables.push(
      vscode.window.onDidChangeVisibleTextEditors(() => this.refreshAll()),
      vscode.window.tabGroups.onDidChangeTabs(() => this.refreshAll()),
      vscode.window.onDidChangeActiveTextEditor(() => this.updateContext()),
    );
  }

  /** Redraw the editors showing these documents (URI keys); all when omitted. */
  refresh(keys?: Set<string>): void {
    for (const editor of visibleTextEditors()) {
      if (keys === undefined || keys.has(uriKey(editor.document.uri.toString()))) this.draw(editor);
    }
    this.updateContext();
  }

  refreshAll(): void {
    this.refresh();
  }

  private draw(editor: vscode.TextEditor): void {
    const uri = editor.document.uri.toString();
    // The left side of Open Diff is the file itself: its right side shows the proposal.
    const entries = this.enabled() && !leftOfProposalDiff(editor) ? this.reviews.entries(uri) : [];
    const sets = {
      final: { removed: [] as vscode.DecorationOptions[], added: [] as vscode.DecorationOptions[] },
      draft: { removed: [] as vscode.DecorationOptions[], added: [] as vscode.DecorationOptions[] },
    };
    const lastLine = editor.document.lineCount - 1;
    for (const e of entries) {
      const p = paint(e.hunk);
      const set = e.final ? sets.final : sets.draft;
      const lines = needsLines(e.hunk) ? splitLines(e.hunk.newText).length : 0;
      const hoverMessage = hover(p.hover, e.taskId, e.hunk.id, e.final, this.proposer(e.taskId), lines);
      for (const line of p.removed) {
        if (line > lastLine) continue;
        set.removed.push({ range: new vscode.Range(line, 0, line, 0), hoverMessage });
      }
      for (const g of p.added) {
        const line = Math.min(g.line, lastLine);
        const end = editor.document.lineAt(line).range.end;
        set.added.push({
          range: new vscode.Range(end, end),
          hoverMessage,
          renderOptions: { after: { contentText: g.text } },
        });
      }
    }
    editor.setDecorations(this.final.removed, sets.final.removed);
    editor.setDecorations(this.final.added, sets.final.added);
    editor.setDecorations(this.draft.removed, sets.draft.removed);
    editor.setDecorations(this.draft.added, sets.draft.added);
  }

  private updateContext(): void {
    const editor = vscode.window.activeTextEditor;
    // a proposal (Open Diff's right side) has the hunks of its file
    const uri = editor === undefined ? undefined : editor.document.uri.scheme === PROPOSAL_SCHEME ? readRef(editor.document.uri)?.uri : editor.document.uri.toString();
    const has = uri !== undefined && this.reviews.reviewable(uri).length > 0;
    if (has !== this.hasHunks) {
      this.hasHunks = has;
      void setContext(CONTEXT_HAS_HUNKS, has);
    }
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    for (const t of [this.final.removed, this.final.added, this.draft.removed, this.draft.added]) t.dispose();
  }
}
