import assert from "node:assert/strict";
import { test } from "node:test";

import { otherTurns, reviseRequest, threadLabel, threadSpots } from "../../src/common/comments";
import { URI, twoHunks } from "./fixtures";

test("threads sit on every hunk of a task in review, decided or not, and nowhere in a draft", () => {
  const d = twoHunks();
  d.files[0]!.hunks[0]!.state = "accepted";
  d.files[0]!.hunks[1]!.revised = true;
  const spots = threadSpots(d);
  assert.deepEqual(
    spots.map((s) => [s.hunkId, s.uri, s.revised, s.state]),
    [
      ["h1", URI, false, "accepted"],
      ["h2", URI, true, "pending"],
    ],
  );
  assert.deepEqual(threadSpots(twoHunks("running", false)), []);
  assert.deepEqual(threadSpots(twoHunks("applied")), []);
});

test("a comment on an accepted or rejected hunk is a revision turn about it too", () => {
  for (const state of ["accepted", "rejected"] as const) {
    const d = twoHunks();
    d.files[0]!.hunks[0]!.state = state;
    const spot = threadSpots(d)[0]!;
    const req = reviseRequest(spot, "why 10?");
    const c = (req?.args.comments as Record<string, unknown>[])[0]!;
    assert.equal(c.hunkId, "h1", state);
  }
});

test("a comment is a baton.revise naming the hunk and its lines (1-based)", () => {
  const spot = threadSpots(twoHunks())[1]!;
  const req = reviseRequest(spot, "  write it as a product ");
  assert.equal(req?.command, "baton.revise");
  const c = (req?.args.comments as Record<string, unknown>[])[0]!;
  assert.equal(c.hunkId, "h2");
  assert.equal(c.text, "write it as a product");
  assert.equal(c.start, spot.range.start.line + 1);
  assert.ok(Number(c.end) >= Number(c.start));
  assert.equal(reviseRequest(spot, "   "), undefined);
});

test("a rejection's reason goes as rejections, with no comment", () => {
  const spot = threadSpots(twoHunks())[0]!;
  const req = reviseRequest(spot, "keep it at 1", true);
  assert.deepEqual(req?.args, { taskId: "t1", comments: [], rejections: [{ hunkId: "h1", reason: "keep it at 1" }] });
});

test("the label says when a hunk is new since the last review", () => {
  assert.equal(threadLabel({ newText: "    return 20\n", revised: true }), "Baton (revised): return 20");
  assert.equal(threadLabel({ newText: "" }), "Baton: removes these lines");
});

test("the turns to step back to are the kept ones not shown", () => {
  const listed = {
    taskId: "t1",
    turns: [
      { turn: 1, commit: "abc1234567890", shown: false },
      { turn: 2, commit: null, shown: true },
      { turn: 3, commit: "def", shown: true },
      { nonsense: true },
    ],
  };
  assert.deepEqual(
    otherTurns(listed).map((t) => t.turn),
    [1],
  );
  assert.deepEqual(otherTurns(undefined), []);
});
