/** The task view's "Hand Off Task…" and "Archive Task" (its context menu): the server's
 * `baton.handoff` (a stopped task to another worker, same task, history kept) and
 * `baton.archive` (a settled task out of the task lists, its record kept). */

import * as vscode from "vscode";

import type { App } from "./commands";
import { traceError, traceInfo } from "./log";
import { readWorkers } from "./protocol";
import { taskIdOf } from "./tasks";
import { registerCommand } from "./vscodeapi";

export const HANDOFF = "baton.client.handoff";
export const ARCHIVE = "baton.client.archive";
/** The choice that lets the project's routing pick the next worker. */
export const NEXT = "$(arrow-right) Next allowed worker";

/** Asks the user to choose one of the items (undefined: dismissed). */
export type Chooser = (items: string[], title: string) => Thenable<string | undefined>;

/** Offer the workers that can run (and "next allowed"), then hand the task to the one picked;
 * the worker it went to, or undefined when the user dismissed the choice. */
export async function handOff(app: Pick<App, "server">, id: string, pick: Chooser): Promise<string | undefined> {
  const workers = readWorkers(await app.server.request("baton.workers", {})).workers;
  const names = workers.filter((w) => w.enabled && w.allowed && w.canRun).map((w) => w.name);
  const chosen = await pick([NEXT, ...names], `Baton: hand task ${id} to`);
  if (chosen === undefined) return undefined;
  const worker = chosen === NEXT ? undefined : chosen;
  const result = await app.server.request<{ worker?: string }>("baton.handoff", { taskId: id, worker });
  return result.worker;
}

export function registerSettledTasks(app: App, refresh: () => Promise<void>): vscode.Disposable[] {
  const guarded = (what: string, fn: (id: string) => Promise<void>) => async (arg: unknown) => {
    const id = taskIdOf(arg);
    if (id === undefined) return; // the menu always names its task
    try {
      await fn(id);
      await refresh();
    } catch (err) {
      traceError(`${what} ${id}: ${String(err)}`);
      void vscode.window.showErrorMessage(`Baton: ${what}: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  const pick: Chooser = (items, title) => vscode.window.showQuickPick(items, { title });
  return [
    registerCommand(HANDOFF, guarded("hand off", async (id) => {
      const worker = await handOff(app, id, pick);
      if (worker !== undefined) traceInfo(`task ${id} handed to ${worker}`);
    })),
    registerCommand(ARCHIVE, guarded("archive", async (id) => {
      await app.server.request("baton.archive", { taskId: id });
      traceInfo(`task ${id} archived`);
    })),
  ];
}
