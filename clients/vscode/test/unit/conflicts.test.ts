import assert from "node:assert/strict";
import { test } from "node:test";

import { ASK_AGENT, CONFLICT_CHOICES, KEEP_MINE, MERGE_VIEW, TAKE_THEIRS, firstConflict, resolveChoice, resolvedLine } from "../../src/common/conflicts";

test("an accept's answer names its first conflicting hunk", () => {
  assert.equal(firstConflict({ applied: [], conflicts: [{ hunkId: "h2", reason: "near 3" }, { hunkId: "h3" }] }), "h2");
  assert.equal(firstConflict({ applied: ["h1"], conflicts: [] }), undefined);
  assert.equal(firstConflict(null), undefined);
  assert.equal(firstConflict({ conflicts: [{ reason: "no id" }] }), undefined);
});

test("the four buttons map to baton.resolve choices, the merge view to none", () => {
  assert.deepEqual(CONFLICT_CHOICES, [KEEP_MINE, TAKE_THEIRS, MERGE_VIEW, ASK_AGENT]);
  assert.equal(resolveChoice(KEEP_MINE), "mine");
  assert.equal(resolveChoice(TAKE_THEIRS), "theirs");
  assert.equal(resolveChoice(ASK_AGENT), "redo");
  assert.equal(resolveChoice(MERGE_VIEW), undefined);
  assert.equal(resolveChoice(undefined), undefined);
});

test("the log names what a resolve did and the task's state", () => {
  assert.equal(resolvedLine("t1", "theirs", { state: "applied" }, "Fix it"), 'Baton: "Fix it" (t1): took the agent\'s lines; now applied');
  assert.equal(resolvedLine("t1", "redo", { state: "running" }), "Baton: t1: asked the agent to redo the hunk against your text; now running");
});
