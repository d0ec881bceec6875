/** A planner's proposal (`baton/plan`): read whatever the server sends, shown with every node's
 * worker, prerequisites, scope and instruction in an order it can run in; a plan with problems
 * cannot be approved. */

import assert from "node:assert/strict";
import { test } from "node:test";

import { approvable, ordered, planMarkdown, readPlan } from "../../src/common/plan";

const PROPOSED = {
  taskId: "p1",
  goal: "Split the work",
  state: "proposed",
  nodes: [
    { key: "join", title: "Write join.txt", instruction: "Write join.txt", worker: "doer", after: ["left", "right"], scope: null, kind: null },
    { key: "left", title: "Create left/a.txt", instruction: "Create left/a.txt\nwith one line", worker: null, after: [], scope: ["left/**"], kind: "delegate" },
    { key: "right", title: "Create right/b.txt", instruction: "Create right/b.txt", worker: "doer", after: [], scope: ["right/**"], kind: null },
  ],
  problems: [],
};

test("a proposal is read, ordered so each node comes after its prerequisites, and approvable", () => {
  const plan = readPlan(PROPOSED);
  assert.equal(plan.state, "proposed");
  assert.deepEqual(ordered(plan.nodes).map((n) => n.key), ["left", "right", "join"]);
  assert.equal(approvable(plan), true);
  const text = planMarkdown(plan);
  assert.match(text, /^# Plan: Split the work/);
  assert.match(text, /## left: Create left\/a.txt\n\n- \*\*worker:\*\* the project's default \(delegate\)\n- \*\*after:\*\* nothing \(starts at once\)\n- \*\*scope:\*\* `left\/\*\*`\n\n> Create left\/a.txt\n> with one line/);
  assert.match(text, /## join: Write join.txt\n\n- \*\*worker:\*\* doer\n- \*\*after:\*\* left, right\n- \*\*scope:\*\* anywhere/);
  assert.ok(text.indexOf("## left") < text.indexOf("## join"));
});

test("a plan with problems is shown with them first and cannot be approved", () => {
  const plan = readPlan({ ...PROPOSED, problems: ["the plan has a cycle: a → b → a"] });
  assert.equal(approvable(plan), false);
  const text = planMarkdown(plan);
  assert.ok(text.indexOf("cannot run") < text.indexOf("## "));
  assert.match(text, /- ⚠ the plan has a cycle: a → b → a/);
  assert.equal(approvable(readPlan({ ...PROPOSED, nodes: [] })), false);
});

test("a question and a failure are read as such; a payload without a task is refused", () => {
  const asks = readPlan({ taskId: "p2", goal: "Add storage", state: "asks", question: "Which database?", nodes: [], problems: [] });
  assert.equal(asks.state, "asks");
  assert.equal(approvable(asks), false);
  assert.match(planMarkdown(asks), /The planner asks: \*\*Which database\?\*\*/);
  const failed = readPlan({ taskId: "p3", state: "failed", message: "the agent crashed" });
  assert.match(planMarkdown(failed), /ended without a plan: the agent crashed/);
  assert.throws(() => readPlan({ state: "proposed" }), /no taskId/);
  assert.throws(() => readPlan([]), /not an object/);
});
