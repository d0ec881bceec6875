/**
 * The "Answer permission request" command: with one request waiting (of the task given, or of
 * any task) it goes straight to its options; with several, a pick chooses which first. The
 * options are offered with "Show details" (the preview in a read-only editor, as the
 * notification's button does); nothing waiting says so. Pure: the pickers come in as
 * {@link PermissionChooser} (`PermissionView` is the VS Code one).
 */

import { Permissions, SHOW_DETAILS } from "./permissions";
import { PermissionRequest } from "./protocol";

/** What the command needs from the editor. */
export interface PermissionChooser {
  /** A short notice (nothing to choose). */
  inform(message: string): void;
  /** A pick among labelled items; resolves to the one chosen (undefined: dismissed). */
  pick<T extends { label: string; description?: string }>(items: T[], placeHolder: string): Thenable<T | undefined>;
  /** Open the request's preview read-only. */
  showDetails(request: PermissionRequest): Thenable<unknown>;
}

export const NOTHING_WAITING = "Baton: no permission request is waiting.";

/** The command's handler; an argument's `taskId` narrows it to that task's requests. */
export function answerPermissionCommand(permissions: Permissions, ui: PermissionChooser): (arg?: unknown) => Promise<void> {
  return async (arg) => {
    const waiting = permissions.list((arg as { taskId?: string } | undefined)?.taskId);
    if (waiting.length === 0) {
      ui.inform(NOTHING_WAITING);
      return;
    }
    const request =
      waiting.length === 1
        ? waiting[0]
        : (
            await ui.pick(
              waiting.map((p) => ({ label: p.tool, description: p.title || p.taskId, p })),
              "Which permission request?",
            )
          )?.p;
    if (request === undefined) return;
    const items = [...request.options.map((o) => ({ label: o.name, id: o.id })), { label: SHOW_DETAILS, id: "" }];
    const pick = await ui.pick(items, `${request.title || request.taskId} asks permission: ${request.tool}`);
    if (pick === undefined) return;
    if (pick.id === "") await ui.showDetails(request);
    else await permissions.choose(request.taskId, request.id, pick.id);
  };
}
