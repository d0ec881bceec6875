/** The "Baton" log output channel. A LogOutputChannel follows the log level the user picks
 * (Developer: Set Log Level…), so nothing here filters by level itself. */

import type { LogOutputChannel } from "vscode";

let channel: LogOutputChannel | undefined;

export function registerLogger(c: LogOutputChannel): LogOutputChannel {
  channel = c;
  return c;
}

export function traceInfo(...parts: unknown[]): void {
  channel?.info(parts.map(String).join(" "));
}

export function traceWarn(...parts: unknown[]): void {
  channel?.warn(parts.map(String).join(" "));
}

export function traceError(...parts: unknown[]): void {
  channel?.error(parts.map((p) => (p instanceof Error ? (p.stack ?? p.message) : String(p))).join(" "));
}

export function traceDebug(...parts: unknown[]): void {
  channel?.debug(parts.map(String).join(" "));
}

export function showLog(): void {
  channel?.show(true);
}
