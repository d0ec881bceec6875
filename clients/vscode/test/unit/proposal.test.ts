import assert from "node:assert/strict";
import { test } from "node:test";

import { applyHunks, offsetAt } from "../../src/common/proposal";
import { hunk } from "./fixtures";

const APP = "def a():\n    return 1\n\n\ndef b():\n    return 2\n";

test("offsetAt counts lines and clamps the character to the line", () => {
  assert.equal(offsetAt(APP, { line: 0, character: 0 }), 0);
  assert.equal(offsetAt(APP, { line: 1, character: 0 }), 9);
  assert.equal(offsetAt(APP, { line: 1, character: 99 }), 21);
  assert.equal(offsetAt(APP, { line: 99, character: 0 }), APP.length);
});

test("applyHunks gives the proposal of the pending hunks", () => {
  const out = applyHunks(APP, [hunk("a", 5, "    return 2\n", "    return 20\n"), hunk("b", 1, "    return 1\n", "    return 10\n")]);
  assert.equal(out, APP.replace("return 1\n", "return 10\n").replace("return 2\n", "return 20\n"));
});

test("insertions and deletions", () => {
  assert.equal(applyHunks("a\nb\n", [hunk("i", 1, "", "x\n")]), "a\nx\nb\n");
  assert.equal(applyHunks("a\nb\nc\n", [hunk("d", 1, "b\n", "")]), "a\nc\n");
});

test("overlapping hunks: the later one is skipped rather than garbling the text", () => {
  const out = applyHunks("a\nb\nc\n", [hunk("x", 0, "a\nb\n", "X\n"), hunk("y", 1, "b\n", "Y\n")]);
  assert.equal(out, "a\nY\nc\n");
});
