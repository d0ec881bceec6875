import assert from "node:assert/strict";
import { test } from "node:test";

import { LensPlan, LensStager, lensesFor } from "../../src/common/codeLens";
import { Command } from "../../src/common/constants";
import { Reviews } from "../../src/common/reviews";
import { URI, twoHunks } from "./fixtures";

function lenses(state: string, final: boolean, pending = 2) {
  const r = new Reviews();
  const d = twoHunks(state, final);
  if (pending === 1) d.files[0]!.hunks[0]!.state = "accepted";
  r.update(d);
  return lensesFor(r.entries(URI), URI);
}

test("final diff: Accept all / Reject all / Open diff on top, Accept | Reject per hunk", () => {
  const l = lenses("review", true);
  assert.deepEqual(
    l.map((x) => [x.line, x.title, x.command]),
    [
      [0, "Baton ▸ task t1: Accept all (2)", Command.acceptAll],
      [0, "Reject all", Command.rejectAll],
      [0, "Open diff", Command.openDiff],
      [1, "Accept", Command.acceptHunk],
      [1, "Reject", Command.rejectHunk],
      [5, "Accept", Command.acceptHunk],
      [5, "Reject", Command.rejectHunk],
    ],
  );
  assert.deepEqual(l[3]!.args, [{ taskId: "t1", hunkIds: ["h1"] }]);
  assert.deepEqual(l[0]!.args, [{ taskId: "t1", hunkIds: ["h1", "h2"] }]);
});

test("one hunk left: no Accept all, the label moves to Open diff", () => {
  const l = lenses("review", true, 1);
  assert.deepEqual(l.map((x) => x.title), ["Baton ▸ task t1: Open diff", "Accept", "Reject"]);
});

test("a draft shows one 'working' lens and no buttons", () => {
  const l = lenses("running", false);
  assert.equal(l.length, 1);
  assert.match(l[0]!.title, /working… \(2 hunks so far\)/);
  assert.equal(l[0]!.line, 1);
});

test("a stale hunk says so on its Accept", () => {
  const r = new Reviews();
  const d = twoHunks();
  d.files[0]!.hunks[1]!.stale = true;
  r.update(d);
  assert.ok(lensesFor(r.entries(URI), URI).some((x) => x.title === "Accept (edited since)" && x.line === 5));
});

test("a draft of a task that stopped working draws no 'working' lens; one that asks says so", () => {
  const r = new Reviews();
  r.update(twoHunks("running", false));
  const entries = r.entries(URI);
  assert.match(lensesFor(entries, URI, () => "running")[0]!.title, /working…/);
  assert.deepEqual(lensesFor(entries, URI, () => "review"), [], "review: the final diff is on its way");
  const asks = lensesFor(entries, URI, () => "needs_input");
  assert.equal(asks.length, 1);
  assert.match(asks[0]!.title, /waits for your reply/);
  assert.equal(asks[0]!.command, Command.reply);
  assert.deepEqual(asks[0]!.args, [{ taskId: "t1" }]);
  assert.match(lensesFor(entries, URI, () => undefined)[0]!.title, /working…/, "an unknown task: as the diff says");
});

test("a line whose lenses changed is left out once, then drawn anew", () => {
  const stager = new LensStager();
  const plan = (line: number, title: string): LensPlan => ({ line, title, command: "c", args: [] });
  const working = [plan(1, "working…")];
  assert.deepEqual(stager.stage(URI, working), { now: working, again: false });
  assert.deepEqual(stager.stage(URI, working), { now: working, again: false }, "unchanged: kept as is");
  const final = [plan(0, "Open diff"), plan(1, "Accept"), plan(1, "Reject"), plan(5, "Accept")];
  const first = stager.stage(URI, final);
  assert.deepEqual(first.now.map((p) => [p.line, p.title]), [[0, "Open diff"], [5, "Accept"]], "line 1 changed: left out");
  assert.equal(first.again, true);
  assert.deepEqual(stager.stage(URI, final), { now: final, again: false }, "asked again: every line, fresh");
  assert.deepEqual(stager.stage("file:///other.py", final), { now: final, again: false }, "per document");
});

test("a hunk new since the last review (a revision's answer) says so on its Accept", () => {
  const r = new Reviews();
  const d = twoHunks();
  d.files[0]!.hunks[1]!.revised = true;
  r.update(d);
  const titles = lensesFor(r.entries(URI), URI).filter((x) => x.command === Command.acceptHunk);
  assert.deepEqual(
    titles.map((x) => [x.line, x.title]),
    [
      [1, "Accept"],
      [5, "Accept (revised)"],
    ],
  );
});

test("a hunk the server calls a conflict says so beforehand and offers the four ways", () => {
  const r = new Reviews();
  const d = twoHunks("review", true);
  d.files[0]!.hunks[1]!.conflict = true;
  r.update(d);
  const l = lensesFor(r.entries(URI), URI).filter((x) => x.line === 5);
  assert.deepEqual(
    l.map((x) => [x.title, x.command]),
    [
      ["$(warning) Conflicts with your edits: Keep mine", Command.resolveHunk],
      ["Take theirs", Command.resolveHunk],
      ["Merge view", Command.openDiff],
      ["Ask the agent to redo it", Command.resolveHunk],
    ],
  );
  assert.deepEqual(
    l.map((x) => x.args),
    [
      [{ taskId: "t1", hunkId: "h2", choice: "mine" }],
      [{ taskId: "t1", hunkId: "h2", choice: "theirs" }],
      [{ taskId: "t1", uri: URI, merge: true }],
      [{ taskId: "t1", hunkId: "h2", choice: "redo" }],
    ],
  );
});
