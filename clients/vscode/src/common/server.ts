/**
 * The language client: starts `baton lsp`, passes the Baton notifications to the extension,
 * and runs the server's `baton.*` commands. Restarting is stop + start with fresh settings.
 *
 * Middlewares: the server's CodeLenses and hovers are dropped (the extension draws its own
 * from `baton/diff`, draft included, with "Open diff"), and the server's "Delegate
 * selection…" and "Reply to" code actions, which carry no instruction or text, are routed to
 * the client's input boxes.
 */

import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
  State,
} from "vscode-languageclient/node";

import { routeDelegateAction } from "./codeActions";
import { traceError, traceInfo } from "./log";
import {
  NOTIFY_DIFF,
  NOTIFY_PERMISSION,
  NOTIFY_STATUS,
  PermissionRequest,
  NOTIFY_TASKS,
  StatusCounts,
  TaskDiff,
  TaskSummary,
  readPermission,
  readStatus,
  readTaskDiff,
  readTasks,
} from "./protocol";
import { InstallError, ServerInstaller } from "./install";
import { selectedInterpreter } from "./python";
import { ServerLaunch, resolveServerLaunch } from "./serverLaunch";
import { NOTIFY_PLAN, PlanProposal, readPlan } from "./plan";
import { NOTIFY_TRANSCRIPT, TranscriptChange, readTranscriptChange } from "./transcript";
import { openServerSettings } from "./serverSettings";
import { Settings, serverSettings } from "./settings";
import { ServerState } from "./statusText";

export interface ServerEvents {
  tasks(tasks: TaskSummary[]): void;
  status(counts: StatusCounts): void;
  diff(diff: TaskDiff): void;
  permission(request: PermissionRequest): void;
  /** A followed transcript changed (`baton/transcript`). */
  transcript(change: TranscriptChange): void;
  /** A planner stopped (`baton/plan`): its proposal, question or failure. */
  plan(proposal: PlanProposal): void;
  state(state: ServerState): void;
  /** The server is up (after every start): time to load the task list. */
  started(): void;
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function which(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

/** The language client, except that its own message for a server that never came up
 * ("couldn't create connection to server", shown even with notifications off) goes to the
 * log only: BatonServer shows one message of its own for that, naming the command. */
class BatonClient extends LanguageClient {
  private up = false;

  markRunning(): void {
    this.up = true;
  }

  override error(message: string, data?: unknown, showNotification: boolean | "force" = true): void {
    super.error(message, data, this.up ? showNotification : false);
  }
}

const INSTALL = "Install Server";
const OPEN_SETTINGS = "Open Server Settings";
const SHOW_LOG = "Show Log";

export class BatonServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<void> | undefined;
  private subscriptions: vscode.Disposable[] = [];
  /** One error message per run of failures: later ones go to the log and the status bar
   * only, until a start succeeds (no toast storm while a setting is being typed). */
  private failureShown = false;
  /** The install offer is made once per window (the view and the command stay). */
  private offered = false;

  constructor(
    private readonly channel: vscode.LogOutputChannel,
    private readonly events: ServerEvents,
    private readonly settings: () => Settings,
    private readonly installer: ServerInstaller,
  ) {}

  /** Show ``message`` with ``actions`` unless this run of failures already showed one. */
  private fail(message: string, ...actions: string[]): void {
    traceError(message);
    if (this.failureShown) return;
    this.failureShown = true;
    void vscode.window.showErrorMessage(message, ...actions).then((pick) => this.act(pick));
  }

  private act(pick: string | undefined): void {
    if (pick === OPEN_SETTINGS) void openServerSettings();
    else if (pick === SHOW_LOG) this.channel.show(true);
    else if (pick === INSTALL) void this.installAndStart();
  }

  /** Install the server into the extension's storage (progress notification), then start it. */
  async installAndStart(): Promise<void> {
    await this.stop();
    this.events.state("installing");
    try {
      const baton = await this.installer.install();
      traceInfo(`installed the server: ${baton}`);
    } catch (err) {
      this.events.state("missing");
      this.failureShown = false;
      this.fail(err instanceof InstallError ? err.message : `Baton: installing the server failed: ${String(err)}`, SHOW_LOG);
      return;
    }
    this.failureShown = false;
    await this.start();
  }

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async launch(): Promise<ServerLaunch | undefined> {
    const s = this.settings();
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    const python = s.serverPath.length === 0 && !s.interpreter ? await selectedInterpreter(folder) : undefined;
    const found = resolveServerLaunch(s, { pythonExtension: python, isExecutable, which, managed: this.installer.installed() });
    if ("error" in found) {
      if (found.kind === "missing") {
        this.events.state("missing");
        traceInfo(found.error);
        if (!this.offered) {
          this.offered = true;
          void vscode.window.showWarningMessage(found.error, INSTALL, OPEN_SETTINGS).then((pick) => this.act(pick));
        }
      } else {
        this.events.state("failed");
        this.fail(found.error, OPEN_SETTINGS);
      }
      return undefined;
    }
    return found;
  }

  private async doStart(): Promise<void> {
    if (this.client !== undefined) return;
    if (this.installer.outdated()) {
      // The extension was updated with a newer server wheel: install it before starting.
      this.events.state("installing");
      try {
        await this.installer.install();
      } catch (err) {
        traceError("updating the installed server failed; starting the one installed:", err);
      }
    }
    const found = await this.launch();
    if (found === undefined) return;
    const s = this.settings();
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    traceInfo(`starting ${[found.command, ...found.args].join(" ")} (${found.source})`);
    const serverOptions: ServerOptions = {
      command: found.command,
      args: found.args,
      options: { cwd, env: { ...process.env, ...s.serverEnv } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }],
      outputChannel: this.channel,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: serverSettings(s),
      synchronize: { configurationSection: "baton" },
      middleware: {
        provideCodeLenses: () => [],
        provideHover: () => null, // the extension's own hover shows hunks, with links
        provideCodeActions: async (document, range, context, token, next) => {
          const items = await next(document, range, context, token);
          return items?.map(routeDelegateAction);
        },
      },
    };
    // A server that never came up is not restarted (a bad command would only fail again);
    // one that ran and crashed is, up to three times in three minutes.
    let ranOnce = false;
    const crashes: number[] = [];
    clientOptions.errorHandler = {
      error: () => ({ action: ranOnce ? ErrorAction.Continue : ErrorAction.Shutdown, handled: true }),
      closed: () => {
        if (!ranOnce || this.client !== client) return { action: CloseAction.DoNotRestart, handled: true };
        const now = Date.now();
        crashes.push(now);
        while (crashes.length > 0 && now - crashes[0]! > 180_000) crashes.shift();
        if (crashes.length <= 3) return { action: CloseAction.Restart, handled: true };
        this.fail("Baton: the server stopped 4 times in 3 minutes; it is not restarted (Baton: Restart Server).", SHOW_LOG);
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    };
    clientOptions.initializationFailedHandler = () => false;
    const client = new BatonClient("baton", "Baton", serverOptions, clientOptions);
    this.client = client;
    this.subscriptions.push(
      client.onDidChangeState((e) => {
        if (e.newState === State.Running) this.events.state("running");
        else if (e.newState === State.Starting) this.events.state("starting");
        else this.events.state(this.client === client ? "failed" : "stopped");
      }),
      client.onNotification(NOTIFY_TASKS, (params: unknown) => this.guard(NOTIFY_TASKS, () => this.events.tasks(readTasks(params)))),
      client.onNotification(NOTIFY_STATUS, (params: unknown) => this.guard(NOTIFY_STATUS, () => this.events.status(readStatus(params)))),
      client.onNotification(NOTIFY_DIFF, (params: unknown) => this.guard(NOTIFY_DIFF, () => this.events.diff(readTaskDiff(params)))),
      client.onNotification(NOTIFY_PERMISSION, (params: unknown) =>
        this.guard(NOTIFY_PERMISSION, () => this.events.permission(readPermission(params))),
      ),
      client.onNotification(NOTIFY_TRANSCRIPT, (params: unknown) =>
        this.guard(NOTIFY_TRANSCRIPT, () => this.events.transcript(readTranscriptChange(params))),
      ),
      client.onNotification(NOTIFY_PLAN, (params: unknown) => this.guard(NOTIFY_PLAN, () => this.events.plan(readPlan(params)))),
    );
    this.events.state("starting");
    try {
      await client.start();
    } catch (err) {
      if (this.client !== client) return; // replaced (settings changed) while starting
      this.events.state("failed");
      const raw = err instanceof Error ? err.message : String(err);
      // The client's words for a program that exited before answering `initialize`.
      const why = /connection got disposed|-32097|Connection is closed/i.test(raw) ? "it exited before answering as a language server" : raw;
      this.fail(
        `Baton: \`${[found.command, ...found.args].join(" ")}\` (${found.source}) did not start the language server: ${why}. ` +
          'It should run `baton lsp` (the Python package baton-lsp).',
        OPEN_SETTINGS,
        SHOW_LOG,
      );
      // The dead client is dropped, so a settings change or Restart Server starts afresh.
      this.client = undefined;
      for (const d of this.subscriptions.splice(0)) d.dispose();
      void client.dispose().catch(() => undefined);
      return;
    }
    ranOnce = true;
    client.markRunning();
    this.failureShown = false;
    this.events.state("running");
    this.events.started();
  }

  private guard(what: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      traceError(`bad ${what} notification:`, err);
    }
  }

  async stop(): Promise<void> {
    await this.starting?.catch(() => undefined);
    const client = this.client;
    this.client = undefined;
    for (const d of this.subscriptions.splice(0)) d.dispose();
    if (client !== undefined) {
      try {
        await client.stop(5000);
      } catch (err) {
        traceError("stopping the server:", err);
      }
      this.events.state("stopped");
    }
  }

  /** Run one of the server's `baton.*` commands with one object argument. */
  async request<T = unknown>(command: string, args?: object): Promise<T> {
    if (this.starting) await this.starting;
    const client = this.client;
    if (client === undefined || client.state !== State.Running) {
      throw new Error("the Baton server is not running (Baton: Restart Server, or see Baton: Show Log)");
    }
    return (await client.sendRequest(ExecuteCommandRequest.type, {
      command,
      arguments: args === undefined ? [] : [args],
    })) as T;
  }

  dispose(): void {
    void this.stop();
  }
}
