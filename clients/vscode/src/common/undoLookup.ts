/**
 * An undo (or redo) of an accepted hunk is a decision: when a document of a watched task
 * changes, look (shortly after, debounced per document) whether its text holds again what a
 * hunk replaced (or proposed), and ask the server to reopen (reaccept) those hunks
 * (`UndoWatch.check`, common/undo). One request per task at a time; when it ends the document
 * is looked at again, as it may have moved on meanwhile. Pure: the documents and the server
 * come in as functions.
 */

import { KeyedDebounce } from "./debounce";
import { Requester } from "./diffFollow";
import { traceInfo } from "./log";
import { uriKey } from "./reviews";
import { UndoWatch } from "./undo";

/** What this module reads of a document (`vscode.TextDocument` is one). */
export interface DocumentText {
  readonly uri: { toString(): string };
  readonly version: number;
  getText(): string;
}

export const UNDO_LOOK_DELAY_MS = 150;

export class UndoLookup {
  private readonly looks: KeyedDebounce<string>;

  constructor(
    private readonly undo: UndoWatch,
    private readonly documentOf: (key: string) => DocumentText | undefined,
    private readonly server: () => Requester | undefined,
    delayMs = UNDO_LOOK_DELAY_MS,
    private readonly log: (...parts: unknown[]) => void = traceInfo,
  ) {
    this.looks = new KeyedDebounce(delayMs, (key) => this.check(key));
  }

  /** Look at the document under a URI key soon. */
  look(key: string): void {
    this.looks.schedule(key);
  }

  /** A document changed: look at it soon if a watched task has hunks in it. */
  edited(uri: string): void {
    if (this.undo.watching(uri)) this.look(uriKey(uri));
  }

  private check(key: string): void {
    const doc = this.documentOf(key);
    const server = this.server();
    if (doc === undefined || server === undefined) return;
    for (const r of this.undo.check(doc.uri.toString(), doc.version, doc.getText())) {
      server
        .request<{ state?: string; reopened?: string[]; reaccepted?: string[] }>(r.command, r.args)
        .then((res) => {
          const done = res?.reopened ?? res?.reaccepted ?? [];
          if (done.length > 0) this.log(`task ${r.args.taskId}: ${r.command} ${done.join(", ")} → ${res?.state}`);
        })
        .catch((err) => this.log(`${r.command} ${r.args.taskId}:`, err))
        .finally(() => {
          this.undo.done(r.args.taskId);
          this.look(key); // the document may have moved on meanwhile
        });
    }
  }

  dispose(): void {
    this.looks.dispose();
  }
}
