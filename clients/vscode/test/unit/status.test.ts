import assert from "node:assert/strict";
import { test } from "node:test";

import { statusLook } from "../../src/common/statusText";

const zero = { running: 0, needsInput: 0, review: 0, failed: 0 };

test("idle, with no word a running-count check could match", () => {
  const look = statusLook(zero, "running");
  assert.equal(look.text, "$(check) Baton");
  assert.doesNotMatch(look.tooltip, /running/);
  assert.equal(look.warning, false);
});

test("counts with a spinner while running", () => {
  const look = statusLook({ ...zero, running: 1, review: 2 }, "running");
  assert.equal(look.text, "Baton $(sync~spin) 1 $(diff) 2");
  assert.match(look.tooltip, /1 running, 2 ready for review/);
  assert.equal(look.warning, false);
});

test("needs input and failures draw attention", () => {
  assert.equal(statusLook({ ...zero, needsInput: 1 }, "running").warning, true);
  assert.match(statusLook({ ...zero, needsInput: 2 }, "running").tooltip, /2 need input/);
  assert.equal(statusLook({ ...zero, failed: 1 }, "running").warning, true);
});

test("the server's own state wins over stale counts", () => {
  assert.match(statusLook({ ...zero, running: 3 }, "starting").text, /loading~spin/);
  assert.match(statusLook(undefined, "failed").text, /error/);
  assert.match(statusLook(undefined, "stopped").tooltip, /stopped/);
});
