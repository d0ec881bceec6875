/** The status-bar watcher: one item with running / needs-input / review counts (a spinner
 * while running), fed by `baton/status`; a click opens the task quick pick. */

import * as vscode from "vscode";

import { Command } from "./constants";
import { StatusCounts } from "./protocol";
import { ServerState, statusLook } from "./statusText";
import { createStatusBarItem } from "./vscodeapi";

export class StatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private counts: StatusCounts | undefined;
  private server: ServerState = "starting";

  constructor() {
    this.item = createStatusBarItem("baton.status", vscode.StatusBarAlignment.Left, -100);
    this.item.name = "Baton";
    this.item.command = Command.showTasks;
    this.render();
    this.item.show();
  }

  setCounts(counts: StatusCounts): void {
    this.counts = counts;
    this.render();
  }

  setServer(state: ServerState): void {
    this.server = state;
    this.render();
  }

  private render(): void {
    const look = statusLook(this.counts, this.server);
    this.item.text = look.text;
    this.item.tooltip = look.tooltip;
    this.item.accessibilityInformation = { label: look.tooltip, role: "button" };
    this.item.backgroundColor = look.warning ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
