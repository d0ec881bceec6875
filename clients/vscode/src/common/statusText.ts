/** The status-bar item's look for the server's counts, and for how agents run (pure). */

import { SandboxState, StatusCounts } from "./protocol";

export type ServerState = "starting" | "running" | "stopped" | "failed" | "missing" | "installing";

export interface StatusLook {
  text: string;
  tooltip: string;
  /** Draw attention (needs input, failed, or agents outside the sandbox). */
  warning: boolean;
}

/** Why agents run outside the sandbox and how to fix it, for the tooltip; "" when they run
 * sandboxed (or the server did not say). */
export function sandboxWarning(sandbox: SandboxState | undefined): string {
  if (!sandbox || sandbox.agents === "sandboxed") return "";
  const advice = sandbox.advice ? ` ${sandbox.advice}.` : "";
  if (sandbox.agents === "refused") {
    const why = sandbox.why || "no sandbox works here";
    return `agents are REFUSED: sandbox = "${sandbox.setting}" in your user config, and ${why}.${advice}`;
  }
  if (sandbox.setting === "off") {
    return `agents run UNSANDBOXED, with all you can reach (sandbox = "off" in your user config).${advice}`;
  }
  const why = sandbox.why || "no sandbox works here";
  return `agents run UNSANDBOXED, with all you can reach: ${why}.${advice}`;
}

export function statusLook(counts: StatusCounts | undefined, server: ServerState): StatusLook {
  if (server === "starting") return { text: "$(loading~spin) Baton", tooltip: "Baton: starting the server…", warning: false };
  if (server === "failed") return { text: "$(error) Baton", tooltip: "Baton: the server is not running — click to see the tasks, or run Baton: Show Log", warning: true };
  if (server === "missing") return { text: "$(cloud-download) Baton", tooltip: "Baton: no server found — run Baton: Install Server", warning: true };
  if (server === "installing") return { text: "$(loading~spin) Baton", tooltip: "Baton: installing the server…", warning: false };
  if (server === "stopped") return { text: "$(circle-slash) Baton", tooltip: "Baton: the server stopped", warning: true };
  const c = counts ?? { running: 0, needsInput: 0, review: 0, failed: 0 };
  const parts: string[] = [];
  const tips: string[] = [];
  if (c.running > 0) {
    parts.push(`$(sync~spin) ${c.running}`);
    tips.push(`${c.running} running`);
  }
  if (c.needsInput > 0) {
    parts.push(`$(question) ${c.needsInput}`);
    tips.push(`${c.needsInput} need${c.needsInput === 1 ? "s" : ""} input`);
  }
  if (c.review > 0) {
    parts.push(`$(diff) ${c.review}`);
    tips.push(`${c.review} ready for review`);
  }
  if (c.failed > 0) {
    parts.push(`$(error) ${c.failed}`);
    tips.push(`${c.failed} failed (last 24 h)`);
  }
  const unsafe = sandboxWarning(c.sandbox);
  if (unsafe) {
    const label = c.sandbox?.agents === "refused" ? "agents refused" : "unsandboxed";
    const tasks = tips.length > 0 ? ` Tasks: ${tips.join(", ")}.` : "";
    return {
      text: [`$(warning) Baton: ${label}`, ...parts].join(" "),
      tooltip: `Baton: ${unsafe}${tasks} Click to show the tasks.`,
      warning: true,
    };
  }
  if (parts.length === 0) {
    return { text: "$(check) Baton", tooltip: "Baton: idle, no task at work or waiting", warning: false };
  }
  return {
    text: `Baton ${parts.join(" ")}`,
    tooltip: `Baton: ${tips.join(", ")} — click to show the tasks`,
    warning: c.needsInput > 0 || c.failed > 0,
  };
}
