/**
 * Baton for VS Code: only wiring. The language client (common/server), the status bar,
 * the task view, the inline diff (decorations + CodeLens + Open Diff), the hunks following
 * edits (common/diffFollow), the undo watch (common/undoLookup), the permission prompts and
 * the commands each live in their own module under common/; VS Code itself is reached
 * through common/vscodeapi.
 */

import type * as vscode from "vscode";

import { CONFIG_SECTION, CONTEXT_SERVER_STATE, Command, PERMISSION_SCHEME, PLAN_SCHEME, PROPOSAL_SCHEME, TASK_VIEW, TRANSCRIPT_SCHEME } from "./common/constants";
import { HunkLenses } from "./common/codeLensProvider";
import { App, notify, refreshTasks, registerCommands, run } from "./common/commands";
import { Debounce } from "./common/debounce";
import { DiffFollow } from "./common/diffFollow";
import { registerDiffReview } from "./common/diffReview";
import { DashboardPanel } from "./common/dashboardView";
import { reviewableFiles } from "./common/fileDecisions";
import { InlineDecorations } from "./common/inlineDecorations";
import { stateLine } from "./common/lifecycle";
import { registerLogger, traceError, traceInfo } from "./common/log";
import { answerPermissionCommand } from "./common/permissionCommand";
import { PermissionView } from "./common/permissionView";
import { Permissions, waitingText } from "./common/permissions";
import { PlanView } from "./common/planView";
import { ProposalView } from "./common/proposalView";
import { ServerCommand, WORKING_STATES } from "./common/protocol";
import { ServerInstaller } from "./common/install";
import { onInterpreterChange, selectedInterpreter } from "./common/python";
import { ReviewComments } from "./common/reviewComments";
import { Reviews, uriKey } from "./common/reviews";
import { BatonServer } from "./common/server";
import { openServerSettings } from "./common/serverSettings";
import { RESTART_KEYS, readSettings } from "./common/settings";
import { StatusBar } from "./common/statusBar";
import { TaskList, proposerOf } from "./common/tasks";
import { TaskView } from "./common/taskView";
import { UndoWatch } from "./common/undo";
import { UndoLookup } from "./common/undoLookup";
import { TranscriptView } from "./common/transcriptView";
import {
  createLogOutputChannel,
  getConfiguration,
  onDidChangeConfiguration,
  onDidChangeTextDocument,
  registerCodeLensProvider,
  registerCommand,
  registerTextDocumentContentProvider,
  registerTreeDataProvider,
  setContext,
  textDocuments,
  workspaceFolders,
} from "./common/vscodeapi";

let server: BatonServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const channel = registerLogger(createLogOutputChannel("Baton"));
  context.subscriptions.push(channel);
  const settings = (): ReturnType<typeof readSettings> => readSettings((key) => getConfiguration(CONFIG_SECTION).get(key));

  const reviews = new Reviews();
  const undo = new UndoWatch();
  const tasks = new TaskList();
  const status = new StatusBar();
  const proposals = new ProposalView(reviews);
  const lenses = new HunkLenses(reviews, (taskId) => tasks.get(taskId)?.state);
  const decorations = new InlineDecorations(
    reviews,
    () => settings().inlineDiff,
    (taskId) => {
      const t = tasks.get(taskId);
      return t === undefined ? undefined : proposerOf(t);
    },
  );
  const toServer = <T>(command: string, args?: object): Promise<T> => {
    if (server === undefined) return Promise.reject(new Error("the Baton server is not running"));
    return server.request<T>(command, args);
  };
  // The permission view refreshes the task view, which shows what a task waits for: each
  // callback reads the other only once the server has sent something (all are built by then).
  const permissionView = new PermissionView(() => taskView.refresh());
  const permissions = new Permissions(
    permissionView,
    (args) => toServer(ServerCommand.answerPermission, args),
    (err) => permissionView.answerFailed(err),
  );
  const taskView = new TaskView(
    tasks,
    (taskId) => {
      const waiting = permissions.list(taskId)[0];
      return waiting === undefined ? undefined : waitingText(waiting);
    },
    (taskId) => reviewableFiles(reviews, taskId),
  );

  const installer = new ServerInstaller(context.globalStorageUri.fsPath, context.extensionPath, () =>
    selectedInterpreter(workspaceFolders()?.[0]?.uri),
  );
  const transcripts = new TranscriptView(toServer);
  const dashboard = new DashboardPanel(toServer);
  const plans = new PlanView(toServer, () => refreshTasks(app));
  const comments = new ReviewComments(reviews, toServer);
  proposals.agentText = async (taskId, uri) => {
    const r = await server?.request<{ text?: unknown }>(ServerCommand.proposed, { taskId, path: uri });
    return typeof r?.text === "string" ? r.text : "";
  };
  const diffsChanged = (keys?: Set<string>): void => {
    decorations.refresh(keys);
    lenses.refresh();
    proposals.refresh();
    taskView.refresh(); // a task's files to review
  };
  // Hunks move with the user's edits; an undo of an accepted hunk reopens it.
  const follow = new DiffFollow(reviews, () => server, diffsChanged);
  const undoLookup = new UndoLookup(undo, (key) => textDocuments().find((d) => uriKey(d.uri.toString()) === key), () => server);
  // The server's events reach `app` (built next, around the server) only once it has started.
  server = new BatonServer(channel, {
    tasks: (list) => {
      for (const t of list) {
        const line = stateLine(tasks.get(t.id), t);
        if (line !== undefined) traceInfo(line);
      }
      for (const notice of tasks.update(list)) notify(app, notice);
      for (const t of list) {
        // A task that stopped without a diff to show (cancelled, failed…): drop its draft.
        // An applied proposal too, at once: its proposer writes the file next, and VS Code
        // reloads the clean document by itself (no hunk may be drawn over the new text).
        if (!WORKING_STATES.has(t.state) && !["review", "needs_input"].includes(t.state)) {
          app.diffsChanged(reviews.remove(t.id));
        }
      }
      for (const t of list) plans.taskState(t.id, t.state);
      taskView.refresh();
      // A draft whose task stopped working loses its "working…" lens now, not when the
      // final diff comes (common/codeLens).
      if (list.some((t) => reviews.task(t.id)?.final === false)) lenses.refresh();
      // A proposal's hover names its proposer: redraw once its summary is known.
      if (list.some((t) => t.proposedBy && t.state === "review")) app.diffsChanged();
    },
    status: (counts) => status.setCounts(counts),
    diff: (diff) => {
      app.diffsChanged(reviews.update(diff));
      comments.diffArrived(diff);
      for (const key of undo.update(diff)) undoLookup.look(key);
    },
    permission: (request) => permissions.update(request),
    transcript: (change) => transcripts.onChange(change),
    plan: (proposal) => plans.onPlan(proposal),
    state: (s) => {
      status.setServer(s);
      void setContext(CONTEXT_SERVER_STATE, s);
    },
    started: () => {
      reviews.clear();
      undo.clear();
      permissions.clear();
      app.diffsChanged();
      void refreshTasks(app).catch((err) => traceError("could not list the tasks:", err));
      transcripts.restarted();
    },
  }, settings, installer);

  const app: App = {
    server,
    reviews,
    tasks,
    proposals,
    transcripts,
    status,
    memento: context.globalState,
    settings,
    tasksChanged: () => taskView.refresh(),
    diffsChanged,
  };

  const restart = new Debounce<string>(1000, (why) => {
    traceInfo(`restarting the server: ${why}`);
    void server?.restart();
  });
  const scheduleRestart = (why: string): void => restart.schedule(why);

  context.subscriptions.push(
    server,
    status,
    proposals,
    lenses,
    decorations,
    taskView,
    registerTreeDataProvider(TASK_VIEW, taskView),
    registerCodeLensProvider({ scheme: "file" }, lenses),
    registerTextDocumentContentProvider(PROPOSAL_SCHEME, proposals),
    permissionView,
    registerTextDocumentContentProvider(PERMISSION_SCHEME, permissionView),
    transcripts,
    registerTextDocumentContentProvider(TRANSCRIPT_SCHEME, transcripts),
    comments,
    ...comments.register(),
    registerCommand(Command.answerPermission, answerPermissionCommand(permissions, permissionView)),
    registerCommand(Command.installServer, () => server?.installAndStart()),
    registerCommand(Command.openServerSettings, () => openServerSettings()),
    dashboard,
    registerCommand(Command.openDashboard, () => run("open dashboard", () => dashboard.open())),
    registerCommand(Command.openDashboardInBrowser, () => run("open dashboard", () => dashboard.openInBrowser())),
    plans,
    registerTextDocumentContentProvider(PLAN_SCHEME, plans),
    registerCommand(Command.plan, (arg) => run("plan", () => plans.start(arg))),
    registerCommand(Command.approvePlan, (arg) => run("approve the plan", () => plans.approve(arg))),
    registerCommand(Command.rejectPlan, (arg) => run("reject the plan", () => plans.reject(arg))),
    ...registerCommands(app),
    ...registerDiffReview(app),
    onDidChangeTextDocument((e) => {
      if (e.contentChanges.length === 0) return;
      const uri = e.document.uri.toString();
      undoLookup.edited(uri);
      const changes = e.contentChanges.map((c) => ({
        range: { start: c.range.start, end: c.range.end },
        text: c.text,
      }));
      follow.edited(uri, changes);
    }),
    onDidChangeConfiguration((e) => {
      if (RESTART_KEYS.some((k) => e.affectsConfiguration(k))) scheduleRestart("settings changed");
      if (e.affectsConfiguration("baton.inlineDiff")) app.diffsChanged();
    }),
    follow,
    undoLookup,
  );
  const interpreterWatch = await onInterpreterChange(() => {
    const s = settings();
    if (s.serverPath.length === 0 && !s.interpreter) scheduleRestart("the Python interpreter changed");
  });
  if (interpreterWatch) context.subscriptions.push(interpreterWatch);

  await server.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
