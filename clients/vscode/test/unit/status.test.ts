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

const sandboxed = { agents: "sandboxed" as const, setting: "auto", why: "", summary: "", advice: "" };
const missing = {
  agents: "unsandboxed" as const,
  setting: "auto",
  why: "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)",
  summary: "Sandbox: NONE",
  advice: 'Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap); or set sandbox = "require" in your user config to refuse unsandboxed agents',
};

test("sandboxed agents change nothing", () => {
  assert.deepEqual(statusLook({ ...zero, sandbox: sandboxed }, "running"), statusLook(zero, "running"));
  const busy = { ...zero, running: 1 };
  assert.deepEqual(statusLook({ ...busy, sandbox: sandboxed }, "running"), statusLook(busy, "running"));
});

test("unsandboxed agents say so plainly, with why and how to fix it", () => {
  const look = statusLook({ ...zero, sandbox: missing }, "running");
  assert.equal(look.text, "$(warning) Baton: unsandboxed");
  assert.equal(look.warning, true);
  assert.match(look.tooltip, /agents run UNSANDBOXED, with all you can reach: bubblewrap is not installed/);
  assert.match(look.tooltip, /Install bubblewrap/);
  assert.match(look.tooltip, /set sandbox = "require"/);
});

test("unsandboxed keeps the counts beside the warning", () => {
  const look = statusLook({ ...zero, running: 2, review: 1, sandbox: missing }, "running");
  assert.equal(look.text, "$(warning) Baton: unsandboxed $(sync~spin) 2 $(diff) 1");
  assert.match(look.tooltip, /Tasks: 2 running, 1 ready for review\./);
});

test('sandbox = "off" names the setting and how to undo it', () => {
  const off = { ...missing, setting: "off", why: "", advice: 'Remove sandbox = "off" from your user config (or set "auto") to sandbox agents' };
  const look = statusLook({ ...zero, sandbox: off }, "running");
  assert.equal(look.text, "$(warning) Baton: unsandboxed");
  assert.match(look.tooltip, /UNSANDBOXED, with all you can reach \(sandbox = "off" in your user config\)\. Remove sandbox = "off"/);
});

test("refused agents say that nothing will start, and why", () => {
  const refused = {
    ...missing,
    agents: "refused" as const,
    setting: "require",
    advice: 'Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap); or set sandbox = "auto" in your user config to run agents unsandboxed',
  };
  const look = statusLook({ ...zero, sandbox: refused }, "running");
  assert.equal(look.text, "$(warning) Baton: agents refused");
  assert.equal(look.warning, true);
  assert.match(look.tooltip, /agents are REFUSED: sandbox = "require" in your user config, and bubblewrap is not installed/);
  assert.match(look.tooltip, /set sandbox = "auto"/);
});

test("the server's own state still wins over the sandbox warning", () => {
  assert.match(statusLook({ ...zero, sandbox: missing }, "starting").text, /loading~spin/);
  assert.match(statusLook({ ...zero, sandbox: missing }, "failed").text, /error/);
});
