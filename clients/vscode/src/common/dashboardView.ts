/**
 * "Baton: Open Dashboard": the broker's dashboard page (docs/reference/dashboard.md) in a
 * webview panel. The server gives a one-time URL (`baton.dashboard`); the panel frames it
 * (common/dashboard) at that very address, with the port mapped for the webview.
 *
 * Not through `asExternalUri`: the broker answers only requests whose `Host` and `Origin`
 * are its own loopback origin (its defence against DNS rebinding), and a mapped address —
 * code-server maps `127.0.0.1:PORT` to a forwarded port of its own — is another origin, so
 * the page would be refused there. The page works where the editor's UI runs on the broker's
 * machine (desktop VS Code, code-server opened on that machine); elsewhere, `baton dashboard`
 * on the broker's machine opens it.
 */

import { randomBytes } from "node:crypto";
import * as vscode from "vscode";

import { DashboardLink, dashboardHtml, readDashboardLink } from "./dashboard";
import { traceInfo } from "./log";
import { ServerCommand } from "./protocol";

export const DASHBOARD_VIEW = "baton.dashboard";

export class DashboardPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;

  constructor(private readonly request: <T>(command: string, args?: object) => Promise<T>) {}

  async open(): Promise<void> {
    const link = readDashboardLink(await this.request<unknown>(ServerCommand.dashboard));
    traceInfo(`dashboard: opening ${link.origin}/dashboard/ in a panel`);
    this.show(link);
  }

  private show(link: DashboardLink): void {
    const options: vscode.WebviewOptions & vscode.WebviewPanelOptions = {
      enableScripts: true, // the framed page's own scripts; the panel itself has none
      retainContextWhenHidden: true, // the URL works once: a hidden panel must not reload it
      portMapping: [{ webviewPort: link.port, extensionHostPort: link.port }],
      localResourceRoots: [],
    };
    if (this.panel === undefined) {
      this.panel = vscode.window.createWebviewPanel(DASHBOARD_VIEW, "Baton Dashboard", vscode.ViewColumn.Active, options);
      this.panel.onDidDispose(() => (this.panel = undefined));
    } else {
      this.panel.webview.options = options;
      this.panel.reveal();
    }
    this.panel.webview.html = dashboardHtml(link, randomBytes(16).toString("base64url"));
  }

  dispose(): void {
    this.panel?.dispose();
  }
}
