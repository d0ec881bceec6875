/** The server's code actions as the client shows them (pure): "Delegate selection…" carries
 * no instruction, "Reply to <title>" no text and "Ask Baton…" no question, so they are routed to the client's own
 * instruction picker and reply box instead of the server's plain-client fallback (a
 * `window/showMessageRequest` with canned instructions or answers). */

import type * as vscode from "vscode";

import { Command } from "./constants";
import { ASK } from "./ask";
import { ServerCommand } from "./protocol";

export function routeDelegateAction(item: vscode.Command | vscode.CodeAction): vscode.Command | vscode.CodeAction {
  const cmd = "command" in item && typeof item.command === "object" ? item.command : undefined;
  const arg: unknown = cmd?.arguments?.[0];
  const has = (key: string): boolean => typeof arg === "object" && arg !== null && key in arg;
  if (cmd?.command === ServerCommand.delegate && !has("instruction")) {
    (item as vscode.CodeAction).command = { ...cmd, command: Command.delegateSelection };
  } else if (cmd?.command === ServerCommand.reply && !has("text")) {
    (item as vscode.CodeAction).command = { ...cmd, command: Command.reply };
  } else if (cmd?.command === ServerCommand.ask && !has("question")) {
    (item as vscode.CodeAction).command = { ...cmd, command: ASK };
  }
  return item;
}
