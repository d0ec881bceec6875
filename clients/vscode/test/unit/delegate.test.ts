import assert from "node:assert/strict";
import { test } from "node:test";

import { Choices, DelegateUi, delegateSelection } from "../../src/common/delegate";
import { History } from "../../src/common/history";
import { DelegateArgs } from "../../src/common/protocol";

const RANGE = { start: { line: 0, character: 0 }, end: { line: 6, character: 0 } };

function fakeUi(over: Partial<DelegateUi> = {}) {
  const calls = { delegated: [] as DelegateArgs[], asked: [] as string[][], saved: [] as string[][], errors: [] as string[] };
  const ui: DelegateUi = {
    selection: () => ({ uri: "file:///r/app.py", range: RANGE, label: "app.py:1-6" }),
    askInstruction: (history) => {
      calls.asked.push(history);
      return Promise.resolve("Make it faster");
    },
    askChoices: (d: Choices) => Promise.resolve({ ...d, worker: "codex", model: "o4", kind: "tests" }),
    delegate: (args) => {
      calls.delegated.push(args);
      return Promise.resolve({ taskId: "t9", state: "queued" });
    },
    saveHistory: (items) => {
      calls.saved.push(items);
      return Promise.resolve();
    },
    error: (m) => calls.errors.push(m),
    ...over,
  };
  return { ui, calls };
}

const defaults = { worker: null, model: null, kind: "delegate" as const };

test("asks for an instruction with the history, remembers it, delegates the selection", async () => {
  const { ui, calls } = fakeUi();
  const id = await delegateSelection(ui, new History(["older"]), { askChoices: false, defaults, workers: [] });
  assert.equal(id, "t9");
  assert.deepEqual(calls.asked, [["older"]]);
  assert.deepEqual(calls.saved, [["Make it faster", "older"]]);
  assert.deepEqual(calls.delegated, [{ uri: "file:///r/app.py", kind: "delegate", instruction: "Make it faster", range: RANGE }]);
});

test("dismissing the instruction delegates nothing", async () => {
  const { ui, calls } = fakeUi({ askInstruction: () => Promise.resolve(undefined) });
  assert.equal(await delegateSelection(ui, new History(), { askChoices: false, defaults, workers: [] }), undefined);
  assert.deepEqual(calls.delegated, []);
  assert.deepEqual(calls.saved, []);
});

test("the code action's arguments win over the selection; its instruction is not asked again", async () => {
  const { ui, calls } = fakeUi();
  const given = [{ uri: "file:///r/other.py", range: { start: { line: 3, character: 0 }, end: { line: 4, character: 2 } }, kind: "fix", instruction: "Fix these diagnostics.", diagnostics: [{ message: "x" }] }];
  await delegateSelection(ui, new History(), { askChoices: false, defaults, workers: [], given });
  assert.deepEqual(calls.asked, []);
  assert.deepEqual(calls.delegated[0], {
    uri: "file:///r/other.py",
    kind: "fix",
    instruction: "Fix these diagnostics.",
    range: given[0]!.range,
    diagnostics: [{ message: "x" }],
  });
});

test("worker, model and kind from the quick picks", async () => {
  const { ui, calls } = fakeUi();
  await delegateSelection(ui, new History(), { askChoices: true, defaults, workers: ["fake", "codex"] });
  assert.deepEqual(calls.delegated[0], { uri: "file:///r/app.py", kind: "tests", instruction: "Make it faster", range: RANGE, worker: "codex", model: "o4" });
});

test("no file open: an error, nothing delegated", async () => {
  const { ui, calls } = fakeUi({ selection: () => undefined });
  assert.equal(await delegateSelection(ui, new History(), { askChoices: false, defaults, workers: [] }), undefined);
  assert.equal(calls.errors.length, 1);
  assert.deepEqual(calls.delegated, []);
});

test("a server refusal is shown, not thrown", async () => {
  const { ui, calls } = fakeUi({ delegate: () => Promise.reject(new Error("the Baton broker is not running")) });
  assert.equal(await delegateSelection(ui, new History(), { askChoices: false, defaults, workers: [] }), undefined);
  assert.match(calls.errors[0]!, /could not delegate: the Baton broker is not running/);
});
