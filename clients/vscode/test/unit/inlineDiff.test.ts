import assert from "node:assert/strict";
import { test } from "node:test";

import { GHOST_LIMIT, paint, splitLines } from "../../src/common/inlineDiff";
import { hunk } from "./fixtures";

test("a one-line change: the line is removed, the new one trails it", () => {
  const p = paint(hunk("h", 1, "    return 1\n", "    return 10\n"));
  assert.deepEqual(p.removed, [1]);
  assert.deepEqual(p.added, [{ line: 1, text: "→ return 10" }]);
  assert.equal(p.hover, "```diff\n-    return 1\n+    return 10\n```");
});

test("more new lines than old: the last removed line says how many more (no squashing)", () => {
  const p = paint(hunk("h", 2, "x\n", "a\nb\nc\n"));
  assert.deepEqual(p.added, [{ line: 2, text: "→ a   + 2 more lines" }]);
  assert.deepEqual(paint(hunk("h", 2, "x\n", "a\nb\n")).added, [{ line: 2, text: "→ a   + 1 more line" }]);
  assert.deepEqual(paint(hunk("h", 4, "", "a\nb\n")).added, [{ line: 3, text: "+ 2 new lines" }]);
});

test("a deletion marks its lines removed", () => {
  const p = paint(hunk("h", 3, "x\ny\n", ""));
  assert.deepEqual(p.removed, [3, 4]);
  assert.deepEqual(p.added.map((g) => g.text), ["⊖ (removed)", "⊖ (removed)"]);
});

test("an insertion trails the line above it (or the first line)", () => {
  assert.deepEqual(paint(hunk("h", 4, "", "new\n")).added, [{ line: 3, text: "+ new" }]);
  assert.deepEqual(paint(hunk("h", 0, "", "new\n")).added, [{ line: 0, text: "+ new" }]);
  assert.deepEqual(paint(hunk("h", 4, "", "new\n")).removed, []);
});

test("long lines are clipped; fences in the text get a longer fence", () => {
  const long = "y".repeat(GHOST_LIMIT * 2);
  assert.equal(paint(hunk("h", 0, "x\n", long + "\n")).added[0]!.text.length, GHOST_LIMIT + 2);
  assert.match(paint(hunk("h", 0, "```\n", "x\n")).hover, /^````diff/);
});

test("splitLines drops the piece after a final newline and a CR", () => {
  assert.deepEqual(splitLines("a\r\nb\n"), ["a", "b"]);
  assert.deepEqual(splitLines(""), []);
});
