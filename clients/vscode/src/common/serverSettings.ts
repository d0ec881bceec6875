/** Opens the `baton.server.*` settings where they can be edited. They are machine-scoped: in
 * a remote window (code-server, SSH, WSL, dev containers) they live in the Remote tab, and the
 * User tab does not list them; locally the User tab does. */

import * as vscode from "vscode";

export const SERVER_SETTINGS_QUERY = "baton.server";

/** The command that opens the settings editor on the tab that holds machine settings. */
export function serverSettingsCommand(remoteName: string | undefined): string {
  return remoteName ? "workbench.action.openRemoteSettings" : "workbench.action.openSettings";
}

export function openServerSettings(): Thenable<unknown> {
  const command = serverSettingsCommand(vscode.env.remoteName);
  return command === "workbench.action.openSettings"
    ? vscode.commands.executeCommand(command, SERVER_SETTINGS_QUERY)
    : vscode.commands.executeCommand(command, { query: SERVER_SETTINGS_QUERY });
}
