import assert from "node:assert/strict";
import { test } from "node:test";

import { Reviews, shiftHunk, uriKey } from "../../src/common/reviews";
import { URI, diff, file, hunk, twoHunks } from "./fixtures";

test("a diff in review is kept; applied or rejected drops it; both report the document", () => {
  const r = new Reviews();
  assert.deepEqual([...r.update(twoHunks())], [uriKey(URI)]);
  assert.equal(r.entries(URI).length, 2);
  const touched = r.update(twoHunks("applied"));
  assert.deepEqual([...touched], [uriKey(URI)]);
  assert.equal(r.entries(URI).length, 0);
  assert.equal(r.task("t1"), undefined);
});

test("only pending hunks are entries, in document order, across tasks", () => {
  const r = new Reviews();
  r.update(diff("t2", [file([hunk("x", 3, "c\n", "C\n")])]));
  const d = twoHunks();
  d.files[0]!.hunks[0]!.state = "accepted";
  r.update(d);
  assert.deepEqual(r.entries(URI).map((e) => e.hunk.id), ["x", "h2"]);
});

test("a comment may be on any hunk of a task in review, accepted or rejected too", () => {
  const r = new Reviews();
  const d = twoHunks();
  d.files[0]!.hunks[0]!.state = "accepted";
  d.files[0]!.hunks[1]!.state = "rejected";
  r.update(d);
  assert.deepEqual(r.entries(URI), []); // nothing left to decide ...
  assert.deepEqual(r.commentable(URI).map((e) => e.hunk.id), ["h1", "h2"]); // ... to talk about
  assert.equal(r.commentableAt(URI, 1)?.hunk.id, "h1");
  assert.equal(r.commentableAt(URI, 5)?.hunk.id, "h2");
  assert.equal(r.commentableAt(URI, 3), undefined);
  r.update(twoHunks("running", false)); // a draft: no threads
  assert.deepEqual(r.commentable(URI), []);
});

test("draft hunks are drawn but not reviewable", () => {
  const r = new Reviews();
  r.update(twoHunks("running", false));
  assert.equal(r.entries(URI).length, 2);
  assert.equal(r.reviewable(URI).length, 0);
  assert.equal(r.at(URI, 1), undefined);
});

test("at, next and previous find hunks by line, wrapping round", () => {
  const r = new Reviews();
  r.update(twoHunks());
  assert.equal(r.at(URI, 1)?.hunk.id, "h1");
  assert.equal(r.at(URI, 2), undefined); // the range ends at column 0 of line 2
  assert.equal(r.next(URI, 0)?.hunk.id, "h1");
  assert.equal(r.next(URI, 1)?.hunk.id, "h2");
  assert.equal(r.next(URI, 5)?.hunk.id, "h1");
  assert.equal(r.previous(URI, 5)?.hunk.id, "h1");
  assert.equal(r.previous(URI, 1)?.hunk.id, "h2");
});

test("URIs that differ only in percent-encoding meet", () => {
  const r = new Reviews();
  r.update(diff("t", [file([hunk("h", 0, "a\n", "b\n")], "file:///my%20repo/a.py")]));
  assert.equal(r.entries("file:///my repo/a.py").length, 1);
  assert.equal(uriKey("file:///C:/x"), uriKey("file:///c%3A/x"));
});

test("an edit above a hunk moves it; an edit inside marks it stale; below leaves it", () => {
  const h = hunk("h", 5, "x\n", "y\n");
  assert.equal(shiftHunk(h, { range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, text: "a\nb\n" }), true);
  assert.equal(h.range.start.line, 7);
  assert.equal(shiftHunk(h, { range: { start: { line: 9, character: 0 }, end: { line: 9, character: 0 } }, text: "z\n" }), false);
  assert.equal(h.range.start.line, 7);
  assert.equal(h.stale, false);
  assert.equal(shiftHunk(h, { range: { start: { line: 7, character: 1 }, end: { line: 7, character: 2 } }, text: "Q" }), true);
  assert.equal(h.stale, true);
  assert.equal(h.range.start.line, 7);
  // Deleting two lines above moves it up.
  shiftHunk(h, { range: { start: { line: 1, character: 0 }, end: { line: 3, character: 0 } }, text: "" });
  assert.equal(h.range.start.line, 5);
});

test("shift applies to the document's hunks only", () => {
  const r = new Reviews();
  r.update(twoHunks());
  assert.equal(r.shift("file:///other.py", [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, text: "\n" }]), false);
  assert.equal(r.shift(URI, [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, text: "\n" }]), true);
  assert.deepEqual(r.entries(URI).map((e) => e.hunk.range.start.line), [2, 6]);
});
