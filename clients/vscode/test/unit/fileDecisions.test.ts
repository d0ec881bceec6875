import assert from "node:assert/strict";
import { test } from "node:test";

import { fileTargets, reviewableFiles } from "../../src/common/fileDecisions";
import { Reviews } from "../../src/common/reviews";
import { URI, diff, file, hunk, twoHunks } from "./fixtures";

const OTHER = "file:///repo/other.py";

function reviews(): Reviews {
  const r = new Reviews();
  const t1 = twoHunks();
  t1.files.push(file([hunk("o1", 0, "a\n", "b\n")], OTHER));
  r.update(t1);
  r.update(diff("t2", [file([hunk("x1", 3, "\n", "x\n")])]));
  return r;
}

test("a file alone: every task's reviewable hunks in it, one call per task", () => {
  assert.deepEqual(fileTargets(reviews(), { uri: URI }), [
    { taskId: "t1", hunkIds: ["h1", "h2"] },
    { taskId: "t2", hunkIds: ["x1"] },
  ]);
});

test("a file and a task: that task's hunks in that file only (not its other files)", () => {
  assert.deepEqual(fileTargets(reviews(), { uri: URI, taskId: "t1" }), [{ taskId: "t1", hunkIds: ["h1", "h2"] }]);
  assert.deepEqual(fileTargets(reviews(), { uri: OTHER, taskId: "t1" }), [{ taskId: "t1", hunkIds: ["o1"] }]);
});

test("decided hunks and drafts are left; nothing left says so", () => {
  const r = new Reviews();
  const d = twoHunks();
  d.files[0]!.hunks[0]!.state = "accepted";
  r.update(d);
  r.update(diff("t9", [file([hunk("d1", 3, "\n", "x\n")])], "running", false));
  assert.deepEqual(fileTargets(r, { uri: URI }), [{ taskId: "t1", hunkIds: ["h2"] }]);
  assert.equal(fileTargets(r, { uri: OTHER }), "Baton: this file has no hunk to review.");
  assert.equal(fileTargets(r, { uri: URI, taskId: "t9" }), "Baton: this file has no hunk to review.");
});

test("a task's reviewable files with their pending counts (none for a draft)", () => {
  assert.deepEqual(reviewableFiles(reviews(), "t1"), [
    { uri: URI, path: "app.py", pending: 2 },
    { uri: OTHER, path: "other.py", pending: 1 },
  ]);
  const r = new Reviews();
  r.update(twoHunks("running", false));
  assert.deepEqual(reviewableFiles(r, "t1"), []);
  assert.deepEqual(reviewableFiles(r, "nope"), []);
});
