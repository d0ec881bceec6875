/**
 * Comment threads on the inline diff (VS Code's Comments API): the user opens a thread on a
 * hunk of a task in review, pending or already accepted or rejected (the gutter's "+" on its
 * lines), types a comment and sends
 * it to the agent, or rejects the hunk saying why; either goes to the server as
 * `baton.revise` (common/comments), which starts the agent's next turn in the same session.
 * A sent thread keeps the comment, read-only, until that task's next result arrives.
 */

import * as vscode from "vscode";

import { COMMENT_CONTROLLER, Command } from "./constants";
import { ThreadSpot, reviseRequest, spotOf, threadLabel } from "./comments";
import { traceInfo } from "./log";
import { TaskDiff } from "./protocol";
import { Reviews } from "./reviews";

type Send = (command: string, args: Record<string, unknown>) => Promise<unknown>;

export class ReviewComments implements vscode.Disposable {
  private readonly controller: vscode.CommentController;
  /** Threads sent to the agent, by task: closed when its next result arrives. */
  private readonly sent = new Map<string, vscode.CommentThread[]>();

  constructor(
    private readonly reviews: Reviews,
    private readonly send: Send,
  ) {
    this.controller = vscode.comments.createCommentController(COMMENT_CONTROLLER, "Baton");
    this.controller.options = {
      prompt: "Comment on the proposed change (it goes to the agent)",
      placeHolder: "What should the agent change here?",
    };
    this.controller.commentingRangeProvider = {
      provideCommentingRanges: (doc) => this.ranges(doc.uri.toString()),
    };
  }

  /** The lines of every hunk (pending, accepted or rejected) of a task in review here. */
  ranges(uri: string): vscode.Range[] {
    return this.reviews
      .commentable(uri)
      .map((e) => spotOf(e))
      .filter((s): s is ThreadSpot => s !== undefined)
      .map((s) => {
        const last = Math.max(s.range.start.line, s.range.end.line - (s.range.end.character === 0 ? 1 : 0));
        return new vscode.Range(s.range.start.line, 0, last, 0);
      });
  }

  /** The hunk a thread was opened on. */
  spotOf(thread: vscode.CommentThread): ThreadSpot | undefined {
    const line = thread.range?.start.line;
    if (line === undefined) return undefined;
    const entry = this.reviews.commentableAt(thread.uri.toString(), line);
    return entry === undefined ? undefined : spotOf(entry);
  }

  /** The "Send to the Agent" (or, with ``reject``, "Reject… Saying Why") of a thread. */
  async submit(reply: vscode.CommentReply, reject = false): Promise<void> {
    const thread = reply.thread;
    const spot = this.spotOf(thread);
    if (spot === undefined) {
      void vscode.window.showWarningMessage("Baton: this thread is not on a hunk of a task in review.");
      return;
    }
    const request = reviseRequest(spot, reply.text, reject);
    if (request === undefined) return;
    try {
      await this.send(request.command, request.args);
    } catch (err) {
      void vscode.window.showErrorMessage(`Baton: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    traceInfo(`task ${spot.taskId}: ${reject ? "rejected hunk" : "comment on hunk"} ${spot.hunkId} sent to the agent`);
    const comment: vscode.Comment = {
      body: reply.text.trim(),
      mode: vscode.CommentMode.Preview,
      author: { name: "You" },
      label: reject ? "rejected, and why" : "sent to the agent",
    };
    thread.comments = [...thread.comments, comment];
    thread.label = `${threadLabel({ newText: "", revised: spot.revised }).split(":")[0] ?? "Baton"}: the agent is revising`;
    thread.canReply = false;
    thread.collapsibleState = vscode.CommentThreadCollapsibleState.Expanded;
    const list = this.sent.get(spot.taskId) ?? [];
    list.push(thread);
    this.sent.set(spot.taskId, list);
  }

  /** A task's new result (or its end): the threads sent on its last review are done. */
  diffArrived(diff: TaskDiff): void {
    if (!diff.final) return;
    for (const thread of this.sent.get(diff.taskId) ?? []) thread.dispose();
    this.sent.delete(diff.taskId);
  }

  register(): vscode.Disposable[] {
    return [
      vscode.commands.registerCommand(Command.sendComment, (reply: vscode.CommentReply) => this.submit(reply)),
      vscode.commands.registerCommand(Command.rejectWithReason, (reply: vscode.CommentReply) => this.submit(reply, true)),
    ];
  }

  dispose(): void {
    for (const threads of this.sent.values()) for (const t of threads) t.dispose();
    this.sent.clear();
    this.controller.dispose();
  }
}
