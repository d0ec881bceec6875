import assert from "node:assert/strict";
import { test } from "node:test";

import { UndoWatch } from "../../src/common/undo";
import { URI, twoHunks } from "./fixtures";

const OLD = "def a():\n    return 1\n\n\ndef b():\n    return 2\n";
const NEW = "def a():\n    return 10\n\n\ndef b():\n    return 20\n";

function applied(): ReturnType<typeof twoHunks> {
  const d = twoHunks("applied");
  for (const h of d.files[0]!.hunks) h.state = "accepted";
  return d;
}

test("a task with nothing accepted is not watched; an applied one is", () => {
  const u = new UndoWatch();
  assert.deepEqual(u.update(twoHunks()), []);
  assert.equal(u.watching(URI), false);
  assert.equal(u.update(applied()).length, 1);
  assert.equal(u.watching(URI), true);
  assert.deepEqual(u.check(URI, 2, NEW), []); // the document still holds the change
});

test("the old text back asks for a reopen, once per version; the new text back for a reaccept", () => {
  const u = new UndoWatch();
  u.update(applied());
  const [reopen, ...more] = u.check(URI, 3, OLD);
  assert.deepEqual(more, []);
  assert.deepEqual(reopen, { command: "baton.reopen", args: { taskId: "t1", hunkIds: ["h1", "h2"] } });
  assert.deepEqual(u.check(URI, 3, OLD), []); // under way
  u.done("t1");
  assert.deepEqual(u.check(URI, 3, OLD), []); // already asked for this version
  // the server answered with the diff in review, both pending again
  u.update(twoHunks());
  assert.equal(u.watching(URI), true, "hunks once accepted stay watched for a redo");
  assert.deepEqual(u.check(URI, 3, OLD), []);
  const [reaccept] = u.check(URI, 4, NEW.replace("\r\n", "\n"));
  assert.deepEqual(reaccept, { command: "baton.reaccept", args: { taskId: "t1", hunkIds: ["h1", "h2"] } });
});

test("a rejected task is forgotten; hunks never accepted are never reaccepted", () => {
  const u = new UndoWatch();
  const d = twoHunks();
  d.files[0]!.hunks[0]!.state = "accepted";
  u.update(d);
  const [r] = u.check(URI, 2, OLD.replace("return 2", "return 20"));
  assert.deepEqual(r?.args.hunkIds, ["h1"]);
  u.done("t1");
  u.update(twoHunks()); // h1 reopened; h2 was never accepted
  const [again] = u.check(URI, 3, NEW);
  assert.deepEqual(again?.args.hunkIds, ["h1"]);
  u.done("t1");
  u.update(twoHunks("rejected"));
  assert.equal(u.watching(URI), false);
});

test("a task working again (a draft) or settled otherwise is forgotten", () => {
  for (const [state, final] of [["running", false], ["cancelled", true]] as const) {
    const u = new UndoWatch();
    u.update(applied());
    assert.deepEqual(u.update(twoHunks(state, final)), []);
    assert.equal(u.watching(URI), false);
    assert.deepEqual(u.check(URI, 9, OLD), []);
  }
});
