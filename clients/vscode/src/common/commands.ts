/**
 * The client's commands (`baton.client.*`) and notifications, with the VS Code UI that the
 * pure flows in delegate.ts and review.ts are given. Focus is only moved by commands the
 * user runs to look at something (Open Diff, Inspect, Review); accept, reject and the
 * notifications never move it.
 */

import * as vscode from "vscode";

import { reportAccept } from "./acceptUi";
import { otherTurns } from "./comments";
import { MERGE_VIEW, resolveChoice, resolvedLine } from "./conflicts";
import { Command } from "./constants";
import { Choices, KINDS, WorkerItem, delegateSelection } from "./delegate";
import { History } from "./history";
import { decisionLine, delegatedLine, moveLine, startedMessage } from "./lifecycle";
import { showLog, traceError, traceInfo } from "./log";
import { ProposalView, proposalCursor } from "./proposalView";
import { DelegateArgs, HunkArgs, ServerCommand, TaskSummary, readTaskDiff, readTasks, readStatus, readWorkers } from "./protocol";
import { ReviewDeps, decide, navigate } from "./review";
import { registerSettledTasks } from "./settledTasks";
import { registerAsk } from "./ask";
import { Reviews, uriKey } from "./reviews";
import { BatonServer } from "./server";
import { Settings } from "./settings";
import { StatusBar } from "./statusBar";
import { TranscriptView } from "./transcriptView";
import { ACCEPT_ALL, Notice, REPLY, REVIEW, SHOW, TaskList, canReply, canRetry, groupOf, iconOf, taskIdOf, titleOf } from "./tasks";
import {
  activeTextEditor,
  createQuickPick,
  registerCommand,
  showErrorMessage,
  showInformationMessage,
  showInputBox,
  showQuickPick,
  visibleTextEditors,
} from "./vscodeapi";

export const HISTORY_KEY = "baton.instructionHistory";
const CANCEL = "Cancel";

export interface App {
  server: BatonServer;
  reviews: Reviews;
  tasks: TaskList;
  proposals: ProposalView;
  transcripts: TranscriptView;
  status: StatusBar;
  memento: vscode.Memento;
  settings(): Settings;
  /** The task list changed: redraw the tree. */
  tasksChanged(): void;
  /** Diffs changed for these documents (all when omitted): redraw decorations and lenses. */
  diffsChanged(keys?: Set<string>): void;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export async function run(what: string, fn: () => Promise<unknown>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    traceError(`${what}:`, err);
    void showErrorMessage(`Baton: ${what} failed: ${message(err)}`);
  }
}

// -- delegate --------------------------------------------------------------------------------

function askInstruction(history: string[], where: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const pick = createQuickPick<vscode.QuickPickItem>();
    const past = history.map((label) => ({ label, description: "recent" }));
    pick.title = `Baton: Delegate ${where}`;
    pick.placeholder = "What should the agent do? (type an instruction, or pick a recent one)";
    pick.items = past;
    pick.matchOnDescription = false;
    pick.onDidChangeValue((value) => {
      const typed = value.trim() ? [{ label: value, description: "new instruction", alwaysShow: true }] : [];
      pick.items = [...typed, ...past.filter((p) => p.label !== value)];
    });
    let done = false;
    pick.onDidAccept(() => {
      done = true;
      const chosen = pick.selectedItems[0]?.label ?? pick.activeItems[0]?.label ?? pick.value;
      pick.hide();
      resolve(chosen.trim() ? chosen : undefined);
    });
    pick.onDidHide(() => {
      pick.dispose();
      if (!done) resolve(undefined);
    });
    pick.show();
  });
}

async function askChoices(defaults: Choices, workerItems: WorkerItem[]): Promise<Choices | undefined> {
  const worker = await showQuickPick(workerItems, {
    title: "Baton: worker",
    placeHolder: "Which agent runs the task? (the profiles the server resolved for this folder)",
    matchOnDescription: true,
  });
  if (worker === undefined) return undefined;
  const model = await showInputBox({
    title: "Baton: model",
    prompt: "Model to ask for (empty: the worker's default)",
    value: defaults.model ?? "",
  });
  if (model === undefined) return undefined;
  const kinds = KINDS.map((k) => ({ label: k, description: k === defaults.kind ? "current" : "", value: k }));
  const kind = await showQuickPick(kinds, { title: "Baton: kind of task", placeHolder: "What kind of task?" });
  if (kind === undefined) return undefined;
  return { worker: worker.value, model: model.trim() || null, kind: kind.value };
}

async function delegate(app: App, askForChoices: boolean, arg: unknown): Promise<void> {
  const s = app.settings();
  const history = new History(app.memento.get<unknown[]>(HISTORY_KEY, []), s.historySize);
  const taskId = await delegateSelection(
    {
      selection: () => {
        const editor = activeTextEditor();
        if (editor === undefined || editor.document.uri.scheme !== "file") return undefined;
        const sel = editor.selection;
        const name = editor.document.uri.path.split("/").pop() ?? "file";
        const label = sel.isEmpty ? name : `${name}:${sel.start.line + 1}-${sel.end.line + (sel.end.character === 0 && sel.end.line > sel.start.line ? 0 : 1)}`;
        return {
          uri: editor.document.uri.toString(),
          range: { start: { line: sel.start.line, character: sel.start.character }, end: { line: sel.end.line, character: sel.end.character } },
          label,
        };
      },
      askInstruction,
      workers: async (uri: string) => readWorkers(await app.server.request(ServerCommand.workers, { uri })),
      askChoices,
      delegate: async (args: DelegateArgs) => {
        const result = await app.server.request(ServerCommand.delegate, args);
        const line = delegatedLine(result, args.worker ?? s.worker);
        if (line !== undefined) traceInfo(line);
        announceStart(app, result, args.worker ?? s.worker);
        return result;
      },
      saveHistory: (items) => Promise.resolve(app.memento.update(HISTORY_KEY, items)),
      error: (m) => void showErrorMessage(m),
    },
    history,
    { askChoices: askForChoices, defaults: { worker: s.worker, model: s.model, kind: "delegate" }, onlyWorkers: s.workers, given: arg },
  );
  if (taskId !== undefined) await refreshTasks(app).catch(() => undefined);
}

/** "Started <title> (task <id>)", with Show (the transcript) and Cancel. */
function announceStart(app: App, result: unknown, worker: string | null): void {
  const text = startedMessage(result, worker);
  const id = taskIdOf(result);
  if (text === undefined || id === undefined || !app.settings().notifications) return;
  void showInformationMessage(text, SHOW, CANCEL).then(async (pick) => {
    if (pick === SHOW) await run("inspect", () => inspect(app, { taskId: id }));
    else if (pick === CANCEL) await run("cancel", () => simple(app, { taskId: id }, ServerCommand.cancel, "", []));
  });
}

// -- review ----------------------------------------------------------------------------------

export function reviewDeps(app: App): ReviewDeps {
  return {
    reviews: app.reviews,
    cursor: () => {
      const editor = activeTextEditor();
      // on a proposal (Open Diff's right side, a peek): the hunk there, in its own file
      return editor ? (proposalCursor(app.reviews, editor.document.uri, editor.selection.active.line) ?? { uri: editor.document.uri.toString(), line: editor.selection.active.line }) : undefined;
    },
    execute: async (command: string, args: HunkArgs) => {
      const uris = app.reviews.task(args.taskId)?.files.map((f) => f.uri) ?? [];
      const title = app.tasks.get(args.taskId)?.title || app.reviews.task(args.taskId)?.title || args.taskId;
      const result = await app.server.request(command, args);
      const verb = command === ServerCommand.accept ? "accept" : "reject";
      traceInfo(decisionLine(verb, args.taskId, result, app.tasks.get(args.taskId)?.title));
      if (verb === "accept") {
        const arg = { taskId: args.taskId };
        reportAccept(result, title, uris, {
          showDiff: () => run("open diff", () => openDiff(app, arg)),
          inspect: () => run("inspect", () => inspect(app, arg)),
          resolve: (label, hunkIds) => onResolveButton(app, args.taskId, hunkIds[0], label),
        });
      }
    },
    reveal: (uri: string, line: number) => {
      const editor = visibleTextEditors().find((e) => uriKey(e.document.uri.toString()) === uriKey(uri));
      if (editor === undefined) return;
      const pos = new vscode.Position(line, 0);
      editor.selection = new vscode.Selection(pos, pos);
      editor.revealRange(new vscode.Range(pos, pos), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    },
    info: (m: string) => void showInformationMessage(m),
  };
}

/** A resolve button of an accept's conflict warning (see RESOLVE_ACTIONS): settle the hunk. */
async function onResolveButton(app: App, taskId: string, hunkId: string | undefined, button: string): Promise<void> {
  if (hunkId === undefined) return;
  const choice = resolveChoice(button);
  if (choice !== undefined) await resolveHunk(app, { taskId, hunkId, choice });
  else if (button === MERGE_VIEW) {
    const file = app.reviews.task(taskId)?.files.find((f) => f.hunks.some((h) => h.id === hunkId));
    await openDiff(app, { taskId, uri: file?.uri, merge: true });
  }
}

/** `baton.resolve` for one hunk (a lens or a button): keep mine, take theirs, or redo. */
async function resolveHunk(app: App, arg: unknown): Promise<void> {
  const a: unknown = Array.isArray(arg) ? arg[0] : arg;
  const o = typeof a === "object" && a !== null ? (a as Record<string, unknown>) : {};
  const { taskId, hunkId, choice } = o;
  if (typeof taskId !== "string" || typeof hunkId !== "string" || typeof choice !== "string") return;
  const result = await app.server.request(ServerCommand.resolve, { taskId, hunkId, choice });
  const title = app.tasks.get(taskId)?.title;
  traceInfo(resolvedLine(taskId, choice, result, title));
  if (choice === "redo") void showInformationMessage(`Baton: the agent is redoing its change against your text (${title ?? taskId}).`);
}

/** `{taskId}` alone (from the tree or a notification) means every pending hunk of the task. */
function wholeTask(app: App, arg: unknown): HunkArgs | undefined {
  const id = taskIdOf(Array.isArray(arg) ? arg[0] : arg);
  if (id === undefined) return undefined;
  const diff = app.reviews.task(id);
  const pending = diff?.files.flatMap((f) => f.hunks.filter((h) => h.state === "pending").map((h) => h.id));
  return pending && pending.length > 0 ? { taskId: id, hunkIds: pending } : { taskId: id };
}

async function openDiff(app: App, arg: unknown): Promise<void> {
  const a: unknown = Array.isArray(arg) ? arg[0] : arg;
  let taskId = taskIdOf(a);
  let uri = typeof a === "object" && a !== null && typeof (a as { uri?: unknown }).uri === "string" ? (a as { uri: string }).uri : undefined;
  if (taskId === undefined) {
    const editor = activeTextEditor();
    const entry = editor ? app.reviews.entries(editor.document.uri.toString())[0] : undefined;
    if (entry === undefined) {
      void showInformationMessage("Baton: this file has no proposal to compare.");
      return;
    }
    taskId = entry.taskId;
    uri = entry.file.uri;
  }
  if (uri === undefined) {
    let diff = app.reviews.task(taskId);
    if (diff === undefined) {
      diff = readTaskDiff(await app.server.request(ServerCommand.diff, { taskId }));
      app.diffsChanged(app.reviews.update(diff));
    }
    uri = diff.files.find((f) => f.hunks.some((h) => h.state === "pending"))?.uri ?? diff.files[0]?.uri;
  }
  if (uri === undefined) {
    void showInformationMessage("Baton: this task changed no file.");
    return;
  }
  const merge = typeof a === "object" && a !== null && (a as { merge?: unknown }).merge === true;
  await app.proposals.show(merge ? { taskId, uri, merge } : { taskId, uri });
}

// -- tasks -----------------------------------------------------------------------------------

export async function refreshTasks(app: App): Promise<void> {
  const listed = readTasks(await app.server.request(ServerCommand.tasks, { limit: 200 }));
  app.tasks.reset(listed);
  app.tasksChanged();
  app.status.setCounts(readStatus(await app.server.request(ServerCommand.status, {})));
}

async function pickTask(
  app: App,
  title: string,
  states?: string[],
  offers?: (task: TaskSummary) => boolean,
): Promise<TaskSummary | undefined> {
  const list = (states ? app.tasks.inStates(...states) : app.tasks.all()).filter((t) => offers?.(t) ?? true);
  if (list.length === 0) {
    void showInformationMessage(states ? `Baton: no task is ${states.join(" or ").replace(/_/g, " ")}.` : "Baton: no task yet.");
    return undefined;
  }
  if (list.length === 1 && states) return list[0];
  const items = list.map((t) => ({
    label: `$(${iconOf(t.state)}) ${titleOf(t)}`,
    description: `${t.state.replace(/_/g, " ")} · ${t.id}`,
    detail: t.message || undefined,
    task: t,
  }));
  return (await showQuickPick(items, { title, matchOnDescription: true, matchOnDetail: true }))?.task;
}

async function reply(app: App, arg: unknown): Promise<void> {
  const id = taskIdOf(Array.isArray(arg) ? arg[0] : arg) ?? (await pickTask(app, "Baton: reply to", ["needs_input"], canReply))?.id;
  if (id === undefined) return;
  const task = app.tasks.get(id);
  const text = await showInputBox({
    title: `Baton: reply to "${task?.title ?? id}"`,
    prompt: task?.message || "Your answer to the agent",
    ignoreFocusOut: true,
  });
  if (!text?.trim()) return;
  await app.server.request(ServerCommand.reply, { taskId: id, text });
}

/** Show an earlier turn's kept result of a task in review as its diff (checkpoints). */
async function stepBack(app: App, arg: unknown): Promise<void> {
  const id = taskIdOf(Array.isArray(arg) ? arg[0] : arg) ?? (await pickTask(app, "Baton: step back", ["review"]))?.id;
  if (id === undefined) return;
  const turns = otherTurns(await app.server.request(ServerCommand.checkpoints, { taskId: id }));
  if (turns.length === 0) {
    void showInformationMessage("Baton: this task has no other turn to step back to (each comment sent keeps one).");
    return;
  }
  const items = turns.map((t) => ({ label: `Turn ${t.turn}`, description: (t.commit ?? "").slice(0, 10), turn: t.turn }));
  const pick = await showQuickPick(items, { title: `Baton: show the result of which turn of "${app.tasks.get(id)?.title ?? id}"?` });
  if (pick === undefined) return;
  await app.server.request(ServerCommand.stepBack, { taskId: id, turn: pick.turn });
  traceInfo(`task ${id}: the review shows turn ${pick.turn}'s result`);
}

async function simple(
  app: App,
  arg: unknown,
  command: string,
  title: string,
  states: string[],
  offers?: (task: TaskSummary) => boolean,
): Promise<void> {
  const id = taskIdOf(Array.isArray(arg) ? arg[0] : arg) ?? (await pickTask(app, title, states, offers))?.id;
  if (id === undefined) return;
  const result = await app.server.request(command, { taskId: id });
  traceInfo(moveLine(command.replace(/^baton\./, ""), id, result, app.tasks.get(id)?.title));
}

async function inspect(app: App, arg: unknown): Promise<void> {
  const id = taskIdOf(Array.isArray(arg) ? arg[0] : arg) ?? (await pickTask(app, "Baton: inspect"))?.id;
  if (id === undefined) return;
  await app.transcripts.show(id, app.tasks.get(id)?.title);
}

async function showTasks(app: App): Promise<void> {
  await refreshTasks(app).catch(() => undefined);
  const task = await pickTask(app, "Baton: tasks");
  if (task === undefined) return;
  const actions: { label: string; run: () => Promise<void> }[] = [];
  const group = groupOf(task.state);
  if (task.state === "review") {
    actions.push({ label: "$(diff) Open diff", run: () => openDiff(app, { taskId: task.id }) });
    actions.push({ label: "$(check-all) Accept all", run: () => decideAll(app, "accept", { taskId: task.id }) });
    actions.push({ label: "$(close-all) Reject all", run: () => decideAll(app, "reject", { taskId: task.id }) });
  }
  if (task.state === "needs_input" && canReply(task)) actions.push({ label: "$(reply) Reply…", run: () => reply(app, { taskId: task.id }) });
  if (group === "running" || task.state === "needs_input") {
    actions.push({ label: "$(debug-stop) Cancel", run: () => simple(app, { taskId: task.id }, ServerCommand.cancel, "", []) });
  }
  if (canRetry(task)) {
    actions.push({ label: "$(debug-restart) Retry", run: () => simple(app, { taskId: task.id }, ServerCommand.retry, "", []) });
  }
  actions.push({ label: "$(info) Inspect", run: () => inspect(app, { taskId: task.id }) });
  const chosen = await showQuickPick(actions, { title: `Baton: ${titleOf(task)} (${task.state.replace(/_/g, " ")})` });
  if (chosen) await chosen.run();
}

async function decideAll(app: App, verb: "accept" | "reject", arg: unknown): Promise<void> {
  await decide(reviewDeps(app), verb, "all", wholeTask(app, arg) ?? arg);
}

// -- notifications ---------------------------------------------------------------------------

export function notify(app: App, notice: Notice): void {
  if (!app.settings().notifications) return;
  const show = notice.kind === "failed" ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
  void show(notice.message, ...notice.actions).then(async (pick) => {
    const arg = { taskId: notice.taskId };
    const now = app.tasks.get(notice.taskId)?.state;
    if ((pick === REVIEW || pick === ACCEPT_ALL) && now !== "review") {
      void showInformationMessage(`Baton: that task is ${now?.replace(/_/g, " ") ?? "gone"} now.`);
      return;
    }
    if (pick === REPLY) await run("reply", () => reply(app, arg));
    else if (pick === REVIEW) await run("review", () => review(app, notice.taskId));
    else if (pick === ACCEPT_ALL) await run("accept", () => decideAll(app, "accept", arg));
    else if (pick === SHOW) await run("inspect", () => inspect(app, arg));
  });
}

/** Open the first changed file of a task at its first hunk (the user asked: focus moves). */
async function review(app: App, taskId: string): Promise<void> {
  const diff = app.reviews.task(taskId);
  const file = diff?.files.find((f) => f.hunks.some((h) => h.state === "pending"));
  if (file === undefined) return openDiff(app, { taskId });
  const first = file.hunks.find((h) => h.state === "pending")!;
  const pos = new vscode.Position(first.range.start.line, 0);
  await vscode.window.showTextDocument(vscode.Uri.parse(file.uri), { selection: new vscode.Range(pos, pos), preview: false });
}

// -- registration ----------------------------------------------------------------------------

export function registerCommands(app: App): vscode.Disposable[] {
  const deps = reviewDeps(app);
  const cmd = (id: string, what: string, fn: (arg: unknown) => unknown): vscode.Disposable =>
    registerCommand(id, (...args: unknown[]) => run(what, async () => await fn(args.length > 1 ? args : args[0])));
  return [
    cmd(Command.delegateSelection, "delegate", (a) => delegate(app, false, a)),
    cmd(Command.delegateWithOptions, "delegate", (a) => delegate(app, true, a)),
    cmd(Command.acceptHunk, "accept", (a) => decide(deps, "accept", "hunk", a)),
    cmd(Command.resolveHunk, "resolve", (a) => resolveHunk(app, a)),
    cmd(Command.rejectHunk, "reject", (a) => decide(deps, "reject", "hunk", a)),
    cmd(Command.acceptAll, "accept all", (a) => decideAll(app, "accept", a)),
    cmd(Command.rejectAll, "reject all", (a) => decideAll(app, "reject", a)),
    cmd(Command.nextHunk, "next hunk", () => navigate(deps, "next")),
    cmd(Command.previousHunk, "previous hunk", () => navigate(deps, "previous")),
    cmd(Command.openDiff, "open diff", (a) => openDiff(app, a)),
    cmd(Command.showTasks, "show tasks", () => showTasks(app)),
    cmd(Command.reply, "reply", (a) => reply(app, a)),
    cmd(Command.stepBack, "step back", (a) => stepBack(app, a)),
    cmd(Command.cancel, "cancel", (a) => simple(app, a, ServerCommand.cancel, "Baton: cancel", ["queued", "preparing", "running", "verifying", "rate_limited", "needs_input"])),
    cmd(Command.retry, "retry", (a) => simple(app, a, ServerCommand.retry, "Baton: retry", ["failed", "interrupted", "cancelled"], canRetry)),
    cmd(Command.inspect, "inspect", (a) => inspect(app, a)),
    cmd(Command.refreshTasks, "refresh", () => refreshTasks(app)),
    cmd(Command.restart, "restart", () => app.server.restart()),
    cmd(Command.showLog, "show log", () => showLog()),
    ...registerSettledTasks(app, () => refreshTasks(app)),
    ...registerAsk(app),
  ];
}
