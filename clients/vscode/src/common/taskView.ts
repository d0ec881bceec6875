/** The "Baton Tasks" tree: tasks grouped by state (needs input, running, review, failed,
 * done), each with inline actions chosen by its contextValue. A task in review lists the
 * files it has hunks to review in, each with its own Keep / Undo (`file pending`). */

import * as vscode from "vscode";

import { Command } from "./constants";
import { TaskSummary } from "./protocol";
import { Group, TaskList, contextValue, describe, iconOf, proposerOf, titleOf } from "./tasks";

/** A file of a task with hunks to review (fileDecisions.reviewableFiles). */
export interface ReviewFile {
  uri: string;
  path: string;
  pending: number;
}

type Node = { group: Group; count: number } | { task: TaskSummary } | { file: ReviewFile & { taskId: string } };

function fileItem(f: ReviewFile & { taskId: string }): vscode.TreeItem {
  const uri = vscode.Uri.parse(f.uri);
  const slash = f.path.lastIndexOf("/");
  const item = new vscode.TreeItem(slash < 0 ? f.path : f.path.slice(slash + 1), vscode.TreeItemCollapsibleState.None);
  item.id = `file:${f.taskId}:${f.uri}`;
  item.resourceUri = uri;
  item.description = [slash < 0 ? "" : f.path.slice(0, slash), `${f.pending} hunk${f.pending === 1 ? "" : "s"} to review`].filter(Boolean).join(" · ");
  item.tooltip = `${f.path}: Keep (accept) or Undo (reject) its ${f.pending} hunk${f.pending === 1 ? "" : "s"}, or open its diff`;
  item.contextValue = "file pending"; // no "review" in it: the task's own `viewItem =~ /review/` actions are not a file's
  item.command = { title: "Open Diff", command: Command.openDiff, arguments: [{ taskId: f.taskId, uri: f.uri }] };
  return item;
}

export class TaskView implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;

  /** `waiting(taskId)`: what the task waits for (a permission request), if anything. */
  constructor(
    private readonly tasks: TaskList,
    private readonly waiting: (taskId: string) => string | undefined = () => undefined,
    /** `files(taskId)`: the task's files with hunks to review. */
    private readonly files: (taskId: string) => ReviewFile[] = () => [],
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
    if ("task" in node && node.task.state === "review") return this.files(node.task.id).map((f) => ({ file: { ...f, taskId: node.task.id } }));
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if ("group" in node) {
      const item = new vscode.TreeItem(node.group, vscode.TreeItemCollapsibleState.Expanded);
      item.description = String(node.count);
      item.id = `group:${node.group}`;
      return item;
    }
    if ("file" in node) return fileItem(node.file);
    const t = node.task;
    const files = t.state === "review" ? this.files(t.id).length : 0;
    const item = new vscode.TreeItem(titleOf(t), files > 0 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
    item.id = `task:${t.id}`;
    const waits = this.waiting(t.id);
    item.description = waits === undefined ? describe(t) : `${describe(t)} — ${waits}`;
    const by = proposerOf(t);
    const proposal = by === undefined ? "" : `\n\nProposed by ${by}: decide its hunks here; ${by} writes the file once every hunk is decided.`;
    item.tooltip = new vscode.MarkdownString(`**${t.title}** \`${t.id}\`\n\n${t.state}${proposal}${t.summary ? `\n\n${t.summary}` : ""}`);
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
