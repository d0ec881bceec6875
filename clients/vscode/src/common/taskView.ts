/** The "Baton Tasks" tree: tasks grouped by state (needs input, running, review, failed,
 * done), each with inline actions chosen by its contextValue. */

import * as vscode from "vscode";

import { Command } from "./constants";
import { TaskSummary } from "./protocol";
import { Group, TaskList, contextValue, describe, iconOf, proposerOf, titleOf, usageLine } from "./tasks";

type Node = { group: Group; count: number } | { task: TaskSummary };

export class TaskView implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;

  /** `waiting(taskId)`: what the task waits for (a permission request), if anything. */
  constructor(
    private readonly tasks: TaskList,
    private readonly waiting: (taskId: string) => string | undefined = () => undefined,
  ) {}

  refresh(): void {
    this.changed.fire();
  }

  getChildren(node?: Node): Node[] {
    const grouped = this.tasks.grouped();
    if (node === undefined) {
      return [...grouped].filter(([, list]) => list.length > 0).map(([group, list]) => ({ group, count: list.length }));
    }
    if ("group" in node) return (grouped.get(node.group) ?? []).map((task) => ({ task }));
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if ("group" in node) {
      const item = new vscode.TreeItem(node.group, vscode.TreeItemCollapsibleState.Expanded);
      item.description = String(node.count);
      item.id = `group:${node.group}`;
      return item;
    }
    const t = node.task;
    const item = new vscode.TreeItem(titleOf(t), vscode.TreeItemCollapsibleState.None);
    item.id = `task:${t.id}`;
    const waits = this.waiting(t.id);
    item.description = waits === undefined ? describe(t) : `${describe(t)} — ${waits}`;
    const by = proposerOf(t);
    const proposal = by === undefined ? "" : `\n\nProposed by ${by}: decide its hunks here; ${by} writes the file once every hunk is decided.`;
    const spent = usageLine(t.usage);
    item.tooltip = new vscode.MarkdownString(`**${t.title}** \`${t.id}\`\n\n${t.state}${proposal}${spent ? `\n\n${spent}` : ""}${t.summary ? `\n\n${t.summary}` : ""}`);
    item.iconPath = new vscode.ThemeIcon(iconOf(t.state));
    item.contextValue = contextValue(t);
    item.command =
      t.state === "review"
        ? { title: "Open Diff", command: Command.openDiff, arguments: [{ taskId: t.id }] }
        : { title: "Inspect", command: Command.inspect, arguments: [{ taskId: t.id }] };
    return item;
  }

  dispose(): void {
    this.changed.dispose();
  }
}
