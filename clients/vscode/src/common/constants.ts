/** Ids the extension owns. Client commands live under `baton.client.*` so they never collide
 * with the server's `baton.*` executeCommand ids, which vscode-languageclient registers. */

export const EXTENSION_ID = "baton.baton";
export const CONFIG_SECTION = "baton";

export const Command = {
  delegateSelection: "baton.client.delegateSelection",
  delegateWithOptions: "baton.client.delegateWithOptions",
  acceptHunk: "baton.client.acceptHunk",
  rejectHunk: "baton.client.rejectHunk",
  resolveHunk: "baton.client.resolveHunk",
  acceptAll: "baton.client.acceptAll",
  rejectAll: "baton.client.rejectAll",
  peekHunk: "baton.client.peekHunk",
  acceptFile: "baton.client.acceptFile",
  rejectFile: "baton.client.rejectFile",
  nextHunk: "baton.client.nextHunk",
  previousHunk: "baton.client.previousHunk",
  openDiff: "baton.client.openDiff",
  showTasks: "baton.client.showTasks",
  reply: "baton.client.reply",
  sendComment: "baton.client.sendComment",
  rejectWithReason: "baton.client.rejectWithReason",
  stepBack: "baton.client.stepBack",
  cancel: "baton.client.cancel",
  retry: "baton.client.retry",
  inspect: "baton.client.inspect",
  refreshTasks: "baton.client.refreshTasks",
  restart: "baton.client.restart",
  showLog: "baton.client.showLog",
  answerPermission: "baton.client.answerPermission",
  installServer: "baton.client.installServer",
  openServerSettings: "baton.client.openServerSettings",
  openDashboard: "baton.client.openDashboard",
  openDashboardInBrowser: "baton.client.openDashboardInBrowser",
  plan: "baton.client.plan",
  approvePlan: "baton.client.approvePlan",
  rejectPlan: "baton.client.rejectPlan",
} as const;

/** The comment controller's id (`commentController == baton` in menus). */
export const COMMENT_CONTROLLER = "baton";

/** Context key: the server's state (statusText's ServerState), for the view's welcome. */
export const CONTEXT_SERVER_STATE = "baton.serverState";

/** Context key: the active editor has reviewable hunks. */
export const CONTEXT_HAS_HUNKS = "baton.hasHunks";
/** Scheme of the read-only proposal documents opened by "Open Diff". */
export const PROPOSAL_SCHEME = "baton-proposal";
/** Scheme of the read-only previews of permission requests ("Show details"). */
export const PERMISSION_SCHEME = "baton-permission";
/** Scheme of the read-only live transcripts of tasks ("Inspect"). */
export const TRANSCRIPT_SCHEME = "baton-transcript";
/** Scheme of the read-only proposals of planners ("Baton: Plan…"). */
export const PLAN_SCHEME = "baton-plan";
export const TASK_VIEW = "baton.tasks";
