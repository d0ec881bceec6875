import assert from "node:assert/strict";
import { test } from "node:test";

import { ProtocolError, readStatus, readTaskDiff, readTasks } from "../../src/common/protocol";

const payload = {
  taskId: "abc",
  title: "Make it bigger",
  state: "review",
  final: true,
  files: [
    {
      uri: "file:///r/app.py",
      path: "app.py",
      oldPath: null,
      status: "modified",
      binary: false,
      version: 3,
      hunks: [
        {
          id: "h1",
          range: { start: { line: 1, character: 0 }, end: { line: 2, character: 0 } },
          oldText: "a\n",
          newText: "b\n",
          state: "pending",
          stale: false,
          wholeFile: false,
        },
      ],
    },
  ],
};

test("readTaskDiff reads the server's baton/diff payload", () => {
  const d = readTaskDiff(payload);
  assert.equal(d.taskId, "abc");
  assert.equal(d.final, true);
  assert.equal(d.files[0]!.version, 3);
  assert.deepEqual(d.files[0]!.hunks[0]!.range.end, { line: 2, character: 0 });
  assert.equal(d.files[0]!.hunks[0]!.conflict, false);
  const marked = JSON.parse(JSON.stringify(payload)) as { files: { hunks: Record<string, unknown>[] }[] };
  marked.files[0]!.hunks[0]!.conflict = true;
  assert.equal(readTaskDiff(marked).files[0]!.hunks[0]!.conflict, true);
});

test("readTaskDiff refuses a hunk without a range, naming the field", () => {
  const bad = structuredClone(payload) as { files: { hunks: Record<string, unknown>[] }[] };
  delete bad.files[0]!.hunks[0]!.range;
  assert.throws(() => readTaskDiff(bad), (e: unknown) => e instanceof ProtocolError && /hunks\[0\]\.range/.test(e.message));
  assert.throws(() => readTaskDiff(null), ProtocolError);
  assert.throws(() => readTaskDiff({ ...payload, taskId: 7 }), /taskId/);
});

test("readStatus reads counts; missing or bad counts are zero", () => {
  assert.deepEqual(readStatus({ running: 2, needsInput: 1, review: 0, failed: 3 }), { running: 2, needsInput: 1, review: 0, failed: 3 });
  assert.deepEqual(readStatus({ running: "x", review: -1 }), { running: 0, needsInput: 0, review: 0, failed: 0 });
});

test("readStatus reads how agents run; a sandbox saying nothing known is left out", () => {
  const sandbox = { agents: "unsandboxed", setting: "off", why: "", summary: "Sandbox: off", advice: "Remove it", kind: "bubblewrap" };
  assert.deepEqual(readStatus({ running: 1, sandbox }).sandbox, {
    agents: "unsandboxed",
    setting: "off",
    why: "",
    summary: "Sandbox: off",
    advice: "Remove it",
  });
  assert.deepEqual(readStatus({ sandbox: { agents: "refused", why: 3 } }).sandbox, {
    agents: "refused",
    setting: "auto",
    why: "",
    summary: "",
    advice: "",
  });
  for (const bad of [undefined, null, "unsandboxed", [], { agents: "maybe" }, {}]) {
    assert.equal("sandbox" in readStatus({ running: 1, sandbox: bad }), false, JSON.stringify(bad));
  }
});

test("readTasks reads summaries and keeps only string next moves", () => {
  const [t] = readTasks({ tasks: [{ id: "t1", state: "running", title: "x", next: ["cancel", 4], worker: null }] });
  assert.equal(t!.id, "t1");
  assert.deepEqual(t!.next, ["cancel"]);
  assert.equal(t!.worker, null);
  assert.throws(() => readTasks({ tasks: [{ state: "running" }] }), /tasks\[0\]\.id/);
});
