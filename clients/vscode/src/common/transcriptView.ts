/**
 * "Inspect": a task's live transcript as a read-only virtual document (`baton-transcript:`,
 * Markdown), never an untitled buffer: nothing to save, nothing dirty. The server renders
 * it (`baton.transcript` with `follow`); each `baton/transcript` change fires `onDidChange`,
 * and an editor scrolled to the end stays at the end (:class:`EndFollow`) until the user
 * scrolls up. Closing its last tab stops following.
 */

import * as vscode from "vscode";

import { TRANSCRIPT_SCHEME } from "./constants";
import { traceError, traceInfo } from "./log";
import { ServerCommand } from "./protocol";
import { TranscriptChange, Transcripts, readTranscript } from "./transcript";

/** The document of a task's transcript; its tab says "Transcript: <title>". */
export function transcriptUri(taskId: string, title?: string): vscode.Uri {
  const label = (title || taskId).replace(/[\\/:*?"<>|\s]+/g, " ").trim().slice(0, 60) || taskId;
  return vscode.Uri.from({ scheme: TRANSCRIPT_SCHEME, path: `/${taskId}/Transcript: ${label}.md` });
}

export function taskOfTranscript(uri: vscode.Uri): string | undefined {
  if (uri.scheme !== TRANSCRIPT_SCHEME) return undefined;
  return uri.path.split("/")[1] || undefined;
}

type Request = (command: string, args: object) => Promise<unknown>;

/**
 * Which documents keep showing their end as they grow. A document follows from when it is
 * shown, scrolled to its end, until the user scrolls up — its first visible line moves up;
 * scrolling back to the end follows again. Whether a view is short of the document's end
 * says nothing: its visible ranges lag behind Baton's reveals (in code-server by a frame or
 * more) while more lines come, and a smaller window shows fewer lines from the same top.
 */
export class EndFollow {
  private readonly following = new Set<string>();
  private readonly tops = new Map<string, number>();

  /** The document was shown at its end. */
  shown(key: string): void {
    this.following.add(key);
  }

  /** The document grew: whether to reveal its end. */
  grew(key: string): boolean {
    return this.following.has(key);
  }

  /** An editor of it now shows lines ``top`` to ``bottom``; its last line is ``last``. */
  scrolled(key: string, top: number, bottom: number, last: number): void {
    const before = this.tops.get(key);
    this.tops.set(key, top);
    if (bottom >= last - 1) this.following.add(key);
    else if (before !== undefined && top < before) this.following.delete(key);
  }

  follows(key: string): boolean {
    return this.following.has(key);
  }

  forget(key: string): void {
    this.following.delete(key);
    this.tops.delete(key);
  }
}

export class TranscriptView implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  readonly model = new Transcripts();
  /** The document of each followed task. */
  private readonly uris = new Map<string, vscode.Uri>();
  /** Documents whose editors show their end as they grow. */
  readonly following = new EndFollow();
  private readonly subscriptions: vscode.Disposable[];

  constructor(private readonly request: Request) {
    this.subscriptions = [
      vscode.workspace.onDidCloseTextDocument((doc) => this.closed(doc.uri)),
      // VS Code keeps a closed tab's document a while: its last tab closing is what counts.
      vscode.window.tabGroups.onDidChangeTabs((e) => {
        for (const tab of e.closed) {
          const uri = tab.input instanceof vscode.TabInputText ? tab.input.uri : undefined;
          if (uri !== undefined && uri.scheme === TRANSCRIPT_SCHEME && !this.inTab(uri)) this.closed(uri);
        }
      }),
      vscode.workspace.onDidChangeTextDocument((e) => this.revealEnd(e.document)),
      vscode.window.onDidChangeTextEditorVisibleRanges((e) => {
        const doc = e.textEditor.document;
        if (doc.uri.scheme !== TRANSCRIPT_SCHEME) return;
        const top = e.visibleRanges[0]?.start.line ?? 0;
        this.following.scrolled(doc.uri.toString(), top, e.visibleRanges.at(-1)?.end.line ?? 0, doc.lineCount - 1);
      }),
    ];
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const taskId = taskOfTranscript(uri);
    if (taskId === undefined) return "";
    if (!this.model.has(taskId)) {
      this.uris.set(taskId, uri);
      this.load(taskId);
    }
    return this.model.text(taskId) ?? "Loading the transcript…\n";
  }

  /** Open (or bring forward) a task's transcript beside the editor, scrolled to its end. */
  async show(taskId: string, title?: string): Promise<void> {
    const uri = this.uris.get(taskId) ?? transcriptUri(taskId, title);
    this.uris.set(taskId, uri);
    if (!this.model.has(taskId)) this.load(taskId);
    // Markdown by its name (.md): setting the language would close and reopen the document.
    const doc = await vscode.workspace.openTextDocument(uri);
    const editor = await vscode.window.showTextDocument(doc, { preview: true, viewColumn: vscode.ViewColumn.Beside });
    const end = new vscode.Position(Math.max(doc.lineCount - 1, 0), 0);
    editor.revealRange(new vscode.Range(end, end), vscode.TextEditorRevealType.Default);
    this.following.shown(uri.toString());
  }

  /** `baton/transcript`. */
  onChange(change: TranscriptChange): void {
    const uri = this.uris.get(change.taskId);
    if (uri === undefined) return;
    const what = this.model.apply(change);
    if (what === "reload") this.load(change.taskId);
    if (what !== "applied") return;
    this.changed.fire(uri);
  }

  /** The server (re)started: ask again for every transcript shown. */
  restarted(): void {
    for (const taskId of this.model.ids()) this.load(taskId);
  }

  private load(taskId: string): void {
    this.model.open(taskId);
    this.request(ServerCommand.transcript, { taskId, follow: true })
      .then((answer) => {
        const uri = this.uris.get(taskId);
        if (!this.model.reset(readTranscript(answer)) || uri === undefined) return;
        this.changed.fire(uri);
      })
      .catch((err) => {
        traceError(`the transcript of ${taskId}:`, err);
        this.model.close(taskId);
      });
  }

  private revealEnd(doc: vscode.TextDocument): void {
    const end = new vscode.Position(Math.max(doc.lineCount - 1, 0), 0);
    const key = doc.uri.toString();
    if (doc.uri.scheme !== TRANSCRIPT_SCHEME || !this.following.grew(key)) return;
    for (const e of vscode.window.visibleTextEditors) {
      if (e.document.uri.toString() === key) e.revealRange(new vscode.Range(end, end), vscode.TextEditorRevealType.Default);
    }
  }

  private inTab(uri: vscode.Uri): boolean {
    const key = uri.toString();
    return vscode.window.tabGroups.all.some((g) => g.tabs.some((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === key));
  }

  private closed(uri: vscode.Uri): void {
    const taskId = taskOfTranscript(uri);
    if (taskId === undefined || !this.model.has(taskId)) return;
    this.model.close(taskId);
    this.uris.delete(taskId);
    this.following.forget(uri.toString());
    traceInfo(`stopped following the transcript of ${taskId}`);
    this.request(ServerCommand.transcript, { taskId, follow: false }).catch(() => undefined);
  }

  dispose(): void {
    for (const d of this.subscriptions) d.dispose();
    this.changed.dispose();
  }
}
