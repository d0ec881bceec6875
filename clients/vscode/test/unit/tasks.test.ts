import assert from "node:assert/strict";
import { test } from "node:test";

import { readTasks } from "../../src/common/protocol";
import { ACCEPT_ALL, REPLY, REVIEW, TaskList, contextValue, describe, groupOf, spentText, taskIdOf, usageLine } from "../../src/common/tasks";
import { task } from "./fixtures";

test("a task turning to needs_input or review gives one notice with its buttons", () => {
  const list = new TaskList();
  assert.deepEqual(list.update([task("a", "running", 1)]), []);
  const [ask] = list.update([task("a", "needs_input", 2, "which file?")]);
  assert.equal(ask!.kind, "needsInput");
  assert.deepEqual(ask!.actions.slice(0, 1), [REPLY]);
  assert.match(ask!.message, /which file\?/);
  const [ready] = list.update([task("a", "review", 3)]);
  assert.deepEqual(ready!.actions, [REVIEW, ACCEPT_ALL]);
  assert.deepEqual(list.update([task("a", "review", 4)]), [], "same state: no new notice");
});

test("a task first seen in review (e.g. after a restart) is not announced", () => {
  assert.deepEqual(new TaskList().update([task("a", "review")]), []);
});

test("a late, older summary does not undo a newer one", () => {
  const list = new TaskList();
  list.update([task("a", "review", 5)]);
  list.update([task("a", "running", 4)]);
  assert.equal(list.get("a")!.state, "review");
});

test("grouping by state for the tree and the quick pick", () => {
  const list = new TaskList();
  list.reset([task("a", "running", 1), task("b", "needs_input", 2), task("c", "applied", 3), task("d", "rate_limited", 4)]);
  const g = list.grouped();
  assert.deepEqual(g.get("running")!.map((t) => t.id), ["d", "a"]);
  assert.deepEqual(g.get("needs input")!.map((t) => t.id), ["b"]);
  assert.deepEqual(g.get("done")!.map((t) => t.id), ["c"]);
  assert.equal(groupOf("interrupted"), "failed");
  assert.equal(contextValue(task("a", "running")), "task running working");
  assert.deepEqual(list.inStates("needs_input").map((t) => t.id), ["b"]);
});

test("taskIdOf reads {taskId}, a summary and a tree node", () => {
  assert.equal(taskIdOf({ taskId: "x" }), "x");
  assert.equal(taskIdOf(task("y", "review")), "y");
  assert.equal(taskIdOf({ task: task("z", "review") }), "z");
  assert.equal(taskIdOf({ group: "running" }), undefined);
  assert.equal(taskIdOf("x"), undefined);
});

test("a task's tokens and cost in its description and tooltip line, estimates marked", () => {
  const estimated = readTasks({
    tasks: [{ ...task("a", "review"), usage: { input: 1000, cached: 500, output: 100, reasoning: 40, cost: 0.004, cost_source: "estimated" } }],
  })[0]!;
  assert.equal(spentText(estimated.usage), "1.6k tokens · ~$0.0040");
  assert.match(describe(estimated), /— 1\.6k tokens · ~\$0\.0040/);
  assert.equal(usageLine(estimated.usage), "Tokens: 1000 in, 500 cached, 100 out (40 reasoning) · $0.0040 (estimated)");
  const reported = readTasks({ tasks: [{ ...task("b", "review"), usage: { input: 58902, output: 38, cost: 0.177276, cost_source: "reported" } }] })[0]!;
  assert.equal(spentText(reported.usage), "58.9k tokens · $0.1773");
  const unpriced = readTasks({ tasks: [{ ...task("c", "running"), usage: { input: 10, output: 2, cost: null, cost_source: null } }] })[0]!;
  assert.equal(spentText(unpriced.usage), "12 tokens");
  const none = readTasks({ tasks: [task("d", "running")] })[0]!;
  assert.equal(none.usage, undefined);
  assert.equal(spentText(none.usage), "");
  assert.equal(usageLine(none.usage), "");
  assert.doesNotMatch(describe(none), /tokens/);
});
