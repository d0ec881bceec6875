import assert from "node:assert/strict";
import { test } from "node:test";

import { Command } from "../../src/common/constants";
import { applyHunks } from "../../src/common/proposal";
import { needsLines, peekAnchor, proposalLenses, proposedLines } from "../../src/common/proposedLines";
import { Reviews } from "../../src/common/reviews";
import { URI, diff, file, hunk, twoHunks } from "./fixtures";

const TEXT = ["l0", "l1", "l2", "l3", "l4", "l5", "l6", "l7", ""].join("\n");

test("each hunk's new lines stand where the proposal document has them", () => {
  const hunks = [
    hunk("grow", 1, "l1\n", "a\nb\nc\n"), // 1 line → 3: the lines below move down by 2
    hunk("gone", 3, "l3\nl4\n", ""), // deletes 2: the lines below move up by 2
    hunk("swap", 6, "l6\n", "x6\n"),
  ];
  const proposal = applyHunks(TEXT, hunks).split("\n");
  const lines = proposedLines(hunks);
  assert.deepEqual(
    lines.map((l) => [l.hunkId, l.start, l.end, l.count, l.endCharacter]),
    [
      ["grow", 1, 3, 3, 1],
      ["gone", 5, 5, 0, 0],
      ["swap", 6, 6, 1, 2],
    ],
  );
  // checked against the text the proposal document really holds
  assert.deepEqual(proposal.slice(1, 4), ["a", "b", "c"]);
  assert.equal(proposal[5], "l5"); // where the deleted lines were: the next line moved up
  assert.equal(proposal[6], "x6");
});

test("the order given does not matter; an overlapping hunk is left out", () => {
  const a = hunk("a", 4, "l4\n", "A\nA\n");
  const b = hunk("b", 0, "l0\n", "B\n");
  const over = hunk("over", 4, "l4\nl5\n", "O\n");
  assert.deepEqual(proposedLines([a, b, over]).map((l) => [l.hunkId, l.start]), [["b", 0], ["a", 4]]);
});

test("a 30-line hunk spans 30 proposal lines", () => {
  const body = Array.from({ length: 30 }, (_, i) => `n${i}`).join("\n") + "\n";
  const [l] = proposedLines([hunk("big", 2, "l2\nl3\n", body)]);
  assert.deepEqual([l!.start, l!.end, l!.count], [2, 31, 30]);
});

test("lines are needed when more than one line is proposed", () => {
  assert.equal(needsLines(hunk("h", 1, "x\n", "y\n")), false);
  assert.equal(needsLines(hunk("h", 1, "x\n", "")), false);
  assert.equal(needsLines(hunk("h", 1, "x\ny\n", "z\n")), false);
  assert.equal(needsLines(hunk("h", 1, "x\n", "y\nz\n")), true);
  assert.equal(needsLines(hunk("h", 1, "", "y\n")), false);
  assert.equal(needsLines(hunk("h", 1, "", "y\nz\n")), true);
  assert.equal(needsLines(hunk("h", 1, "a\nb\n", "c\nd\n")), true);
});

test("the peek opens under the hunk's last old line, or above an insertion", () => {
  assert.equal(peekAnchor(hunk("h", 3, "a\nb\nc\n", "x\n")), 5);
  assert.equal(peekAnchor(hunk("h", 3, "a\n", "x\ny\n")), 3);
  assert.equal(peekAnchor(hunk("h", 3, "", "x\ny\n")), 2);
  assert.equal(peekAnchor(hunk("h", 0, "", "x\n")), 0);
});

test("the proposal side's lenses: the file on top, Accept | Reject over each hunk's new lines", () => {
  const r = new Reviews();
  const d = diff("t1", [file([hunk("grow", 1, "    return 1\n", "    a\n    b\n    c\n"), hunk("h2", 5, "    return 2\n", "    return 20\n")])]);
  r.update(d);
  r.update(diff("t2", [file([hunk("other", 3, "\n", "x\n")])]));
  const ref = { taskId: "t1", uri: URI };
  const l = proposalLenses(r.entries(URI), ref);
  assert.deepEqual(
    l.map((x) => [x.line, x.title, x.command]),
    [
      [0, "Baton ▸ task t1: Accept file (2)", Command.acceptFile],
      [0, "Reject file", Command.rejectFile],
      [1, "Accept", Command.acceptHunk],
      [1, "Reject", Command.rejectHunk],
      [7, "Accept", Command.acceptHunk], // line 5 moved down by the two lines added above
      [7, "Reject", Command.rejectHunk],
    ],
  );
  assert.deepEqual(l[0]!.args, [{ taskId: "t1", uri: URI }]);
  assert.deepEqual(l[4]!.args, [{ taskId: "t1", hunkIds: ["h2"] }]);
  // a merge view's lines are the agent's: only the file's lenses
  assert.deepEqual(proposalLenses(r.entries(URI), { ...ref, merge: true }).map((x) => x.title), ["Baton ▸ task t1: Accept file (2)", "Reject file"]);
});

test("the proposal side: a conflict offers Keep mine | Take theirs; a draft offers nothing", () => {
  const r = new Reviews();
  const d = twoHunks();
  d.files[0]!.hunks[0]!.conflict = true;
  r.update(d);
  const l = proposalLenses(r.entries(URI), { taskId: "t1", uri: URI });
  assert.deepEqual(l.slice(2, 4).map((x) => [x.title, x.args]), [
    ["$(warning) Conflicts with your edits: Keep mine", [{ taskId: "t1", hunkId: "h1", choice: "mine" }]],
    ["Take theirs", [{ taskId: "t1", hunkId: "h1", choice: "theirs" }]],
  ]);
  const drafts = new Reviews();
  drafts.update(twoHunks("running", false));
  assert.deepEqual(proposalLenses(drafts.entries(URI), { taskId: "t1", uri: URI }), []);
});
