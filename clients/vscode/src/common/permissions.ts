/**
 * ACP permission prompts, shown by the extension (it sends `permissionPrompts: "inline"`, so
 * the server sends no `window/showMessageRequest`). Each `baton/permission` with status
 * `pending` is kept by task id + permission id and shown as a notification (not modal) whose
 * buttons are the options plus "Show details", which opens the preview (the command line or
 * the diff) in a read-only editor. The choice is answered with `baton.answerPermission`
 * (option id and permission id). A later `answered` or `cancelled` (answered from the CLI or
 * another editor, or the task was cancelled) forgets it and closes its details; a button of
 * a notification that is no longer pending does nothing. Pure: the UI comes in as
 * {@link PermissionUi}, so the logic is tested without VS Code.
 */

import { PermissionRequest } from "./protocol";

export const SHOW_DETAILS = "Show details";

/** What the permission prompts need from the editor. */
export interface PermissionUi {
  /** A notification with buttons; resolves to the button clicked (undefined: dismissed). */
  notify(message: string, buttons: string[]): Thenable<string | undefined>;
  /** Open the request's preview read-only. */
  showDetails(request: PermissionRequest): Thenable<unknown>;
  /** Close the preview of a request that is no longer pending (if it is open). */
  closeDetails(request: PermissionRequest): void;
  /** The set of pending requests changed (task view, status). */
  changed(): void;
}

export type Answer = (args: { taskId: string; option: string; permissionId: string }) => Promise<unknown>;

export function permissionKey(taskId: string, id: string): string {
  return `${taskId}\u0000${id}`;
}

/** The notification's text: who asks, for what, and a short preview. */
export function promptMessage(p: PermissionRequest, limit = 300): string {
  const who = p.title || `task ${p.taskId}`;
  let preview = p.preview.trim();
  if (preview.length > limit) preview = `${preview.slice(0, limit)}…`;
  const what = preview && preview !== p.tool ? `: ${preview.split("\n")[0]}${preview.includes("\n") ? " …" : ""}` : "";
  return `Baton: ${who} asks permission: ${p.tool}${what}`;
}

/** The read-only document "Show details" opens. */
export function detailsText(p: PermissionRequest): string {
  const lines = [
    `# Baton: ${p.title || p.taskId} asks permission (${p.kind || "other"})`,
    `# task ${p.taskId}, request ${p.id}: ${p.tool}`,
  ];
  if (p.files.length > 0) lines.push(`# files: ${p.files.join(", ")}`);
  lines.push(`# options: ${p.options.map((o) => o.name).join(" | ")}`, "");
  lines.push(p.preview || p.command || p.tool);
  return lines.join("\n") + "\n";
}

/** Short text for the task view: what the task waits for. */
export function waitingText(p: PermissionRequest): string {
  return `waits for permission: ${p.tool}`;
}

export class Permissions {
  private readonly pending = new Map<string, PermissionRequest>();
  private readonly shown = new Set<string>();

  constructor(
    private readonly ui: PermissionUi,
    private readonly answer: Answer,
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {}

  /** Requests still waiting, oldest first; only one task's when `taskId` is given. */
  list(taskId?: string): PermissionRequest[] {
    return [...this.pending.values()].filter((p) => taskId === undefined || p.taskId === taskId);
  }

  get(taskId: string, id: string): PermissionRequest | undefined {
    return this.pending.get(permissionKey(taskId, id));
  }

  /** Take one `baton/permission` notification. */
  update(p: PermissionRequest): void {
    const key = permissionKey(p.taskId, p.id);
    if (p.status === "pending") {
      this.pending.set(key, p);
      this.ui.changed();
      if (!this.shown.has(key)) this.prompt(key);
      return;
    }
    const was = this.pending.get(key);
    this.pending.delete(key);
    this.shown.delete(key);
    this.ui.closeDetails(was ?? p);
    this.ui.changed();
  }

  /** Forget everything (the server stopped; a new one sends what still waits). */
  clear(): void {
    for (const p of this.pending.values()) this.ui.closeDetails(p);
    this.pending.clear();
    this.shown.clear();
    this.ui.changed();
  }

  /** Show the notification of a pending request (again, e.g. after "Show details"). */
  prompt(key: string): void {
    const p = this.pending.get(key);
    if (p === undefined) return;
    this.shown.add(key);
    const names = p.options.map((o) => o.name);
    void this.ui.notify(promptMessage(p), [...names, SHOW_DETAILS]).then(
      async (pick) => {
        const now = this.pending.get(key);
        if (now === undefined) return; // answered elsewhere or cancelled meanwhile
        if (pick === undefined) {
          this.shown.delete(key); // dismissed: it stays pending (task view, or answer later)
          return;
        }
        if (pick === SHOW_DETAILS) {
          await this.ui.showDetails(now);
          this.prompt(key);
          return;
        }
        const option = now.options[names.indexOf(pick)];
        if (option !== undefined) await this.choose(now.taskId, now.id, option.id);
      },
      (err: unknown) => this.onError(err),
    );
  }

  /** Answer a pending request with one of its options (by id). */
  async choose(taskId: string, id: string, option: string): Promise<void> {
    const key = permissionKey(taskId, id);
    const p = this.pending.get(key);
    if (p === undefined) return;
    try {
      await this.answer({ taskId, option, permissionId: id });
    } catch (err) {
      this.onError(err);
      return;
    }
    // the server's "answered" notification does the same; do not wait for it
    this.pending.delete(key);
    this.shown.delete(key);
    this.ui.closeDetails(p);
    this.ui.changed();
  }
}
