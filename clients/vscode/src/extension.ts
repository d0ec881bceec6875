/**
 * Baton for VS Code: only wiring. The language client (common/server), the status bar,
 * the task view, the inline diff (decorations + CodeLens + Open Diff) and the commands each
 * live in their own module under common/.
 */

import * as vscode from "vscode";

import { CONFIG_SECTION, CONTEXT_SERVER_STATE, Command, PERMISSION_SCHEME, PROPOSAL_SCHEME, TASK_VIEW, TRANSCRIPT_SCHEME } from "./common/constants";
import { HunkLenses } from "./common/codeLensProvider";
import { App, notify, refreshTasks, registerCommands } from "./common/commands";
import { registerDiffReview } from "./common/diffReview";
import { reviewableFiles } from "./common/fileDecisions";
import { InlineDecorations } from "./common/inlineDecorations";
import { stateLine } from "./common/lifecycle";
import { registerLogger, traceError, traceInfo } from "./common/log";
import { PermissionView } from "./common/permissionView";
import { Permissions, SHOW_DETAILS, waitingText } from "./common/permissions";
import { ProposalView } from "./common/proposalView";
import { ServerCommand, WORKING_STATES, readTaskDiff } from "./common/protocol";
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
import { TranscriptView } from "./common/transcriptView";
import { createLogOutputChannel, getConfiguration, onDidChangeConfiguration, setContext } from "./common/vscodeapi";

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
  // eslint-disable-next-line prefer-const
  let permissions: Permissions;
  const taskView = new TaskView(
    tasks,
    (taskId) => {
      const waiting = permissions.list(taskId)[0];
      return waiting === undefined ? undefined : waitingText(waiting);
    },
    (taskId) => reviewableFiles(reviews, taskId),
  );
  const permissionView = new PermissionView(() => taskView.refresh());
  permissions = new Permissions(
    permissionView,
    (args) => {
      if (server === undefined) return Promise.reject(new Error("the Baton server is not running"));
      return server.request(ServerCommand.answerPermission, args);
    },
    (err) => {
      traceError("could not answer the permission request:", err);
      void vscode.window.showErrorMessage(`Baton: ${err instanceof Error ? err.message : String(err)}`);
    },
  );

  const installer = new ServerInstaller(context.globalStorageUri.fsPath, context.extensionPath, () =>
    selectedInterpreter(vscode.workspace.workspaceFolders?.[0]?.uri),
  );
  const transcripts = new TranscriptView((command, args) => {
    if (server === undefined) return Promise.reject(new Error("the Baton server is not running"));
    return server.request(command, args);
  });
  const comments = new ReviewComments(reviews, (command, args) => {
    if (server === undefined) return Promise.reject(new Error("the Baton server is not running"));
    return server.request(command, args);
  });
  proposals.agentText = async (taskId, uri) => {
    const r = await server?.request<{ text?: unknown }>(ServerCommand.proposed, { taskId, path: uri });
    return typeof r?.text === "string" ? r.text : "";
  };
  // eslint-disable-next-line prefer-const
  let app: App;
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
      for (const key of undo.update(diff)) lookForUndo(key);
    },
    permission: (request) => permissions.update(request),
    transcript: (change) => transcripts.onChange(change),
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

  app = {
    server,
    reviews,
    tasks,
    proposals,
    transcripts,
    status,
    memento: context.globalState,
    settings,
    tasksChanged: () => taskView.refresh(),
    diffsChanged: (keys) => {
      decorations.refresh(keys);
      lenses.refresh();
      proposals.refresh();
      taskView.refresh(); // a task's files to review
    },
  };

  // After the user edits a document, hunks below the edit move with it; the server's own
  // placement follows shortly (baton.diff), debounced per task.
  const pendingFetch = new Map<string, ReturnType<typeof setTimeout>>();
  const refetch = (taskId: string): void => {
    clearTimeout(pendingFetch.get(taskId));
    pendingFetch.set(
      taskId,
      setTimeout(() => {
        pendingFetch.delete(taskId);
        if (!reviews.task(taskId)) return;
        server
          ?.request(ServerCommand.diff, { taskId })
          .then((d) => app.diffsChanged(reviews.update(readTaskDiff(d))))
          .catch((err) => traceInfo(`baton.diff ${taskId}:`, err));
      }, 400),
    );
  };

  // An undo (or redo) of an accepted hunk is a decision: when a document of a watched task
  // changes, ask the server to reopen (reaccept) what its text may hold again (common/undo).
  const undoTimers = new Map<string, ReturnType<typeof setTimeout>>();
  function lookForUndo(key: string): void {
    clearTimeout(undoTimers.get(key));
    undoTimers.set(
      key,
      setTimeout(() => {
        undoTimers.delete(key);
        const doc = vscode.workspace.textDocuments.find((d) => uriKey(d.uri.toString()) === key);
        if (doc === undefined || server === undefined) return;
        for (const r of undo.check(doc.uri.toString(), doc.version, doc.getText())) {
          server
            .request<{ state?: string; reopened?: string[]; reaccepted?: string[] }>(r.command, r.args)
            .then((res) => {
              const done = res?.reopened ?? res?.reaccepted ?? [];
              if (done.length > 0) traceInfo(`task ${r.args.taskId}: ${r.command} ${done.join(", ")} → ${res?.state}`);
            })
            .catch((err) => traceInfo(`${r.command} ${r.args.taskId}:`, err))
            .finally(() => {
              undo.done(r.args.taskId);
              lookForUndo(key); // the document may have moved on meanwhile
            });
        }
      }, 150),
    );
  }

  let restartTimer: ReturnType<typeof setTimeout> | undefined;
  const scheduleRestart = (why: string): void => {
    clearTimeout(restartTimer);
    restartTimer = setTimeout(() => {
      traceInfo(`restarting the server: ${why}`);
      void server?.restart();
    }, 1000);
  };

  context.subscriptions.push(
    server,
    status,
    proposals,
    lenses,
    decorations,
    taskView,
    vscode.window.registerTreeDataProvider(TASK_VIEW, taskView),
    vscode.languages.registerCodeLensProvider({ scheme: "file" }, lenses),
    vscode.workspace.registerTextDocumentContentProvider(PROPOSAL_SCHEME, proposals),
    permissionView,
    vscode.workspace.registerTextDocumentContentProvider(PERMISSION_SCHEME, permissionView),
    transcripts,
    vscode.workspace.registerTextDocumentContentProvider(TRANSCRIPT_SCHEME, transcripts),
    comments,
    ...comments.register(),
    vscode.commands.registerCommand(Command.answerPermission, async (arg?: { taskId?: string }) => {
      const waiting = permissions.list(arg?.taskId);
      if (waiting.length === 0) {
        void vscode.window.showInformationMessage("Baton: no permission request is waiting.");
        return;
      }
      const request =
        waiting.length === 1
          ? waiting[0]
          : (
              await vscode.window.showQuickPick(
                waiting.map((p) => ({ label: p.tool, description: p.title || p.taskId, p })),
                { placeHolder: "Which permission request?" },
              )
            )?.p;
      if (request === undefined) return;
      const items = [...request.options.map((o) => ({ label: o.name, id: o.id })), { label: SHOW_DETAILS, id: "" }];
      const pick = await vscode.window.showQuickPick(items, { placeHolder: `${request.title || request.taskId} asks permission: ${request.tool}` });
      if (pick === undefined) return;
      if (pick.id === "") await permissionView.showDetails(request);
      else await permissions.choose(request.taskId, request.id, pick.id);
    }),
    vscode.commands.registerCommand(Command.installServer, () => server?.installAndStart()),
    vscode.commands.registerCommand(Command.openServerSettings, () => openServerSettings()),
    ...registerCommands(app),
    ...registerDiffReview(app),
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (e.contentChanges.length === 0) return;
      const uri = e.document.uri.toString();
      if (undo.watching(uri)) lookForUndo(uriKey(uri));
      const changes = e.contentChanges.map((c) => ({
        range: { start: c.range.start, end: c.range.end },
        text: c.text,
      }));
      if (reviews.shift(uri, changes)) {
        app.diffsChanged(new Set([uriKey(uri)]));
        for (const entry of reviews.entries(uri)) refetch(entry.taskId);
      }
    }),
    onDidChangeConfiguration((e) => {
      if (RESTART_KEYS.some((k) => e.affectsConfiguration(k))) scheduleRestart("settings changed");
      if (e.affectsConfiguration("baton.inlineDiff")) app.diffsChanged();
    }),
    { dispose: () => pendingFetch.forEach((t) => clearTimeout(t)) },
    { dispose: () => undoTimers.forEach((t) => clearTimeout(t)) },
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
