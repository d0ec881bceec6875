import assert from "node:assert/strict";
import { test } from "node:test";

import { History } from "../../src/common/history";

test("newest first, no repeats, capped, junk dropped", () => {
  const h = new History(["b", 3, "", "a"], 3);
  assert.deepEqual(h.list(), ["b", "a"]);
  assert.deepEqual(h.add(" a "), ["a", "b"]);
  h.add("c");
  assert.deepEqual(h.add("d"), ["d", "c", "a"]);
  assert.deepEqual(h.add("  "), ["d", "c", "a"]);
  h.resize(1);
  assert.deepEqual(h.list(), ["d"]);
});
