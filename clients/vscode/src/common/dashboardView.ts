/**
 * "Baton: Open Dashboard": the broker's dashboard page (docs/reference/dashboard.md) in a
 * webview panel. The server gives a one-time URL (`baton.dashboard`); the panel frames it
 * (common/dashboard) at that very address, with the port mapped for the webview.
 *
 * Not through `asExternalUri`: the broker answers only requests whose `Host` and `Origin`
 * are its own loopback origin (its defence against DNS rebinding), and a mapped address —
 * code-server maps `127.0.0.1:PORT` to a forwarded port of its own — is another origin, so
 * the page would be refused there. The page works where the editor's UI runs on the broker's
 * machine: desktop VS Code, code-server opened in a browser on that machine (at `localhost`
 * or `127.0.0.1`).
 *
 * The frame opens the link as a *framed* page (`&framed=1`): the panel is of another site
 * than `http://127.0.0.1:PORT` (desktop VS Code's `vscode-webview://` frames, code-server at
 * `localhost`), where the browser tab's `SameSite=Strict` session cookie would never reach
 * the page; instead the broker answers the link with the page and a session id in it, which
 * the page keeps in memory and sends as a header (the live socket: a subprotocol). The
 * extension host never sees the session: the token goes from the broker's answer straight
 * into the frame's address, spent by the frame's first load. A reloaded panel (its link is
 * spent) needs a fresh link: **Open Again** in the panel's bar; **Open in Browser** (also the
 * command **Baton: Open Dashboard in Browser**) opens one in the system's browser instead.
 */

import { randomBytes } from "node:crypto";
import * as vscode from "vscode";

import { Command } from "./constants";
import { DashboardLink, dashboardHtml, readDashboardLink } from "./dashboard";
import { traceInfo } from "./log";
import { ServerCommand } from "./protocol";

export const DASHBOARD_VIEW = "baton.dashboard";

export class DashboardPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;

  constructor(private readonly request: <T>(command: string, args?: object) => Promise<T>) {}

  private async link(): Promise<DashboardLink> {
    return readDashboardLink(await this.request<unknown>(ServerCommand.dashboard));
  }

  /** The page in the panel (made, or shown again with a fresh link). */
  async open(): Promise<void> {
    const link = await this.link();
    traceInfo(`dashboard: opening ${link.origin}/dashboard/ in a panel`);
    this.show(link);
  }

  /** The page in the system's browser, from a fresh link (each works once). */
  async openInBrowser(): Promise<void> {
    const link = await this.link();
    traceInfo(`dashboard: opening ${link.origin}/dashboard/ in the browser`);
    if (!(await vscode.env.openExternal(vscode.Uri.parse(link.url)))) {
      throw new Error(`the browser could not be opened; the link, good once within 120 s: ${link.url}`);
    }
  }

  private show(link: DashboardLink): void {
    const options: vscode.WebviewOptions & vscode.WebviewPanelOptions = {
      enableScripts: true, // the framed page's own scripts; the panel itself has none
      retainContextWhenHidden: true, // the URL works once: a hidden panel must not reload it
      portMapping: [{ webviewPort: link.port, extensionHostPort: link.port }],
      localResourceRoots: [],
      enableCommandUris: [Command.openDashboardInBrowser, Command.openDashboard],
    };
    if (this.panel === undefined) {
      this.panel = vscode.window.createWebviewPanel(DASHBOARD_VIEW, "Baton Dashboard", vscode.ViewColumn.Active, options);
      this.panel.onDidDispose(() => (this.panel = undefined));
    } else {
      this.panel.webview.options = options;
      this.panel.reveal();
    }
    this.panel.webview.html = dashboardHtml(link, randomBytes(16).toString("base64url"), Command.openDashboardInBrowser, Command.openDashboard);
  }

  dispose(): void {
    this.panel?.dispose();
  }
}
