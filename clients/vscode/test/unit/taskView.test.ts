import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { Command } from "../../src/common/constants";
import { reviewableFiles } from "../../src/common/fileDecisions";
import { Reviews } from "../../src/common/reviews";
import { TaskList } from "../../src/common/tasks";
import { TaskView } from "../../src/common/taskView";
import { file, hunk, task, twoHunks } from "./fixtures";

const OTHER = "file:///repo/src/other.py";

function view(): { view: TaskView; list: TaskList } {
  const reviews = new Reviews();
  const d = twoHunks();
  d.files.push(file([hunk("o1", 0, "a\n", "b\n")], OTHER));
  d.files[1]!.path = "src/other.py";
  reviews.update(d);
  const list = new TaskList();
  list.update([task("t1", "review"), task("t2", "running")]);
  return { view: new TaskView(list, () => undefined, (id) => reviewableFiles(reviews, id)), list };
}

test("a task in review lists its files to review, each opening its diff", () => {
  const { view: v, list } = view();
  const node = { task: list.get("t1")! };
  assert.equal(v.getTreeItem(node).collapsibleState, 2); // expanded: its files show
  const files = v.getChildren(node);
  assert.equal(files.length, 2);
  const items = files.map((f) => v.getTreeItem(f));
  assert.deepEqual(
    items.map((i) => [i.label, i.description, i.contextValue]),
    [
      ["app.py", "2 hunks to review", "file pending"],
      ["other.py", "src · 1 hunk to review", "file pending"],
    ],
  );
  assert.deepEqual(items[1]!.command, { title: "Open Diff", command: Command.openDiff, arguments: [{ taskId: "t1", uri: OTHER }] });
  assert.deepEqual(v.getChildren({ task: list.get("t2")! }), []);
  assert.equal(v.getTreeItem({ task: list.get("t2")! }).collapsibleState, 0);
  v.dispose();
});

test("a file's inline actions are Keep / Undo File, and none of the task's", () => {
  const manifest = JSON.parse(readFileSync(join(__dirname, "..", "..", "package.json"), "utf8")) as {
    contributes: { menus: Record<string, { command: string; when: string }[]> };
  };
  // the `viewItem` clauses of the task view's item menus, tried on a file's contextValue
  const matches = (when: string, value: string): boolean => {
    const m = /viewItem (==|=~) (?:'([^']*)'|\/(.*?)\/)/.exec(when);
    if (m === null) return false;
    return m[1] === "==" ? m[2] === value : new RegExp(m[3]!).test(value);
  };
  const forFile = manifest.contributes.menus["view/item/context"]!.filter((e) => matches(e.when, "file pending")).map((e) => e.command);
  assert.deepEqual(forFile, [Command.acceptFile, Command.rejectFile]);
});
