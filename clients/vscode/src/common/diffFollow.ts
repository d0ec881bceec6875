/**
 * Hunks follow the user's edits: when a document changes, the hunks drawn below an edit move
 * with it at once (`Reviews.shift`), and the server's own placement of each task's diff in the
 * new text (`baton.diff`) is asked for shortly after, debounced per task, and drawn when it
 * comes. Pure: the server and the redraw come in as functions.
 */

import { KeyedDebounce } from "./debounce";
import { traceInfo } from "./log";
import { ServerCommand, readTaskDiff } from "./protocol";
import { Reviews, TextChange, uriKey } from "./reviews";

/** What this module needs of the server (`BatonServer` is one). */
export interface Requester {
  request<T = unknown>(command: string, args?: object): Promise<T>;
}

export const REFETCH_DELAY_MS = 400;

export class DiffFollow {
  private readonly refetches: KeyedDebounce<string>;

  constructor(
    private readonly reviews: Reviews,
    private readonly server: () => Requester | undefined,
    private readonly changed: (keys?: Set<string>) => void,
    delayMs = REFETCH_DELAY_MS,
    private readonly log: (...parts: unknown[]) => void = traceInfo,
  ) {
    this.refetches = new KeyedDebounce(delayMs, (taskId) => this.refetch(taskId));
  }

  /** A document changed: move its hunks, redraw them, and schedule each task's refetch. */
  edited(uri: string, changes: readonly TextChange[]): void {
    if (!this.reviews.shift(uri, changes)) return;
    this.changed(new Set([uriKey(uri)]));
    for (const entry of this.reviews.entries(uri)) this.refetches.schedule(entry.taskId);
  }

  private refetch(taskId: string): void {
    if (!this.reviews.task(taskId)) return;
    this.server()
      ?.request(ServerCommand.diff, { taskId })
      .then((d) => this.changed(this.reviews.update(readTaskDiff(d))))
      .catch((err) => this.log(`baton.diff ${taskId}:`, err));
  }

  dispose(): void {
    this.refetches.dispose();
  }
}
