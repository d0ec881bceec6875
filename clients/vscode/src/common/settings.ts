/** The extension's settings (`baton.*`), read through a getter so the logic is testable. */

export interface Settings {
  serverPath: string[];
  interpreter: string;
  serverEnv: Record<string, string>;
  worker: string | null;
  model: string | null;
  /** Offer only these of the server's workers in "Delegate with Options" (empty: all). */
  workers: string[];
  isolation: string;
  briefRules: string[];
  progressInterval: number;
  historySize: number;
  notifications: boolean;
  inlineDiff: boolean;
  /** Be the IDE of Claude Code sessions in a terminal (the server's `claudeIde`). */
  claudeIde: boolean;
}

/** Settings whose change needs a new server process. */
export const RESTART_KEYS = ["baton.server.path", "baton.interpreter", "baton.server.env"] as const;

export type Getter = (key: string) => unknown;

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string" && v.trim() !== "") : [];
}

function text(value: unknown): string | null {
  return typeof value === "string" && value.trim() !== "" ? value.trim() : null;
}

function env(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (typeof v === "string") out[k] = v;
    }
  }
  return out;
}

function number(value: unknown, low: number, high: number, fallback: number): number {
  return typeof value === "number" && Number.isFinite(value) && value >= low && value <= high ? value : fallback;
}

/** `get` reads one key under `baton.` (e.g. `get("server.path")`). */
export function readSettings(get: Getter): Settings {
  return {
    serverPath: strings(get("server.path")),
    interpreter: text(get("interpreter")) ?? "",
    serverEnv: env(get("server.env")),
    worker: text(get("worker")),
    model: text(get("model")),
    workers: strings(get("workers")),
    isolation: text(get("isolation")) ?? "worktree",
    briefRules: strings(get("briefRules")),
    progressInterval: number(get("progressInterval"), 0, 60, 0.5),
    historySize: Math.floor(number(get("history.size"), 0, 200, 30)),
    notifications: get("notifications") !== false,
    inlineDiff: get("inlineDiff") !== false,
    claudeIde: get("claudeIde") !== false,
  };
}

/** What the server reads from `initializationOptions` and `didChangeConfiguration`. */
export function serverSettings(s: Settings): Record<string, unknown> {
  return {
    baton: {
      worker: s.worker,
      model: s.model,
      isolation: s.isolation,
      briefRules: s.briefRules,
      progressInterval: s.progressInterval,
      claudeIde: s.claudeIde,
      // ACP permission prompts are drawn by the extension (common/permissions), not as messages
      permissionPrompts: "inline",
      // an accept's conflicts are reported by the extension, with buttons (common/acceptUi)
      acceptReports: "inline",
    },
  };
}
