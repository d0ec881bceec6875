/** The server's code actions as the client shows them (pure): "Delegate selection…" carries
 * no instruction, so it is routed to the client's instruction picker instead of the server's
 * plain-client fallback (a `window/showMessageRequest` with canned instructions). */

import type * as vscode from "vscode";

import { Command } from "./constants";
import { ServerCommand } from "./protocol";

export function routeDelegateAction(item: vscode.Command | vscode.CodeAction): vscode.Command | vscode.CodeAction {
  const cmd = "command" in item && typeof item.command === "object" ? item.command : undefined;
  if (cmd?.command !== ServerCommand.delegate) return item;
  const arg: unknown = cmd.arguments?.[0];
  if (typeof arg === "object" && arg !== null && "instruction" in arg) return item;
  (item as vscode.CodeAction).command = { ...cmd, command: Command.delegateSelection };
  return item;
}
