import assert from "node:assert/strict";
import { test } from "node:test";

import { Choices, DelegateUi, WorkerItem, delegateSelection, workerItems } from "../../src/common/delegate";
import { History } from "../../src/common/history";
import { DelegateArgs, Workers, readWorkers } from "../../src/common/protocol";

/** What the server's `baton.workers` answers (snake_case, as on the wire). */
const WIRE = {
  root: "/r",
  default: "claude-work",
  default_reason: "default_worker in your config",
  workers: [
    { name: "fake", provider: "fake", enabled: true, allowed: true, can_run: true, concurrency: 4, source: "user" },
    { name: "claude-work", provider: "claude", model: "claude-sonnet-4-5", label: "Work", enabled: true, allowed: true, can_run: true, source: "user" },
    { name: "codex", provider: "codex", enabled: true, allowed: true, can_run: false, problem: "codex not installed", source: "default" },
    { name: "old", provider: "pi", enabled: false, allowed: false, can_run: false, problem: "disabled" },
  ],
};
const SERVER_WORKERS: Workers = readWorkers(WIRE);

const RANGE = { start: { line: 0, character: 0 }, end: { line: 6, character: 0 } };

function fakeUi(over: Partial<DelegateUi> = {}) {
  const calls = { delegated: [] as DelegateArgs[], asked: [] as string[][], saved: [] as string[][], errors: [] as string[], offered: [] as WorkerItem[][], listed: [] as string[] };
  const ui: DelegateUi = {
    selection: () => ({ uri: "file:///r/app.py", range: RANGE, label: "app.py:1-6" }),
    askInstruction: (history) => {
      calls.asked.push(history);
      return Promise.resolve("Make it faster");
    },
    workers: (uri) => {
      calls.listed.push(uri);
      return Promise.resolve(SERVER_WORKERS);
    },
    askChoices: (d: Choices, items: WorkerItem[]) => {
      calls.offered.push(items);
      return Promise.resolve({ ...d, worker: "codex", model: "o4", kind: "tests" });
    },
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
  const id = await delegateSelection(ui, new History(["older"]), { askChoices: false, defaults, onlyWorkers: [] });
  assert.equal(id, "t9");
  assert.deepEqual(calls.asked, [["older"]]);
  assert.deepEqual(calls.saved, [["Make it faster", "older"]]);
  assert.deepEqual(calls.delegated, [{ uri: "file:///r/app.py", kind: "delegate", instruction: "Make it faster", range: RANGE }]);
});

test("dismissing the instruction delegates nothing", async () => {
  const { ui, calls } = fakeUi({ askInstruction: () => Promise.resolve(undefined) });
  assert.equal(await delegateSelection(ui, new History(), { askChoices: false, defaults, onlyWorkers: [] }), undefined);
  assert.deepEqual(calls.delegated, []);
  assert.deepEqual(calls.saved, []);
});

test("the code action's arguments win over the selection; its instruction is not asked again", async () => {
  const { ui, calls } = fakeUi();
  const given = [{ uri: "file:///r/other.py", range: { start: { line: 3, character: 0 }, end: { line: 4, character: 2 } }, kind: "fix", instruction: "Fix these diagnostics.", diagnostics: [{ message: "x" }] }];
  await delegateSelection(ui, new History(), { askChoices: false, defaults, onlyWorkers: [], given });
  assert.deepEqual(calls.asked, []);
  assert.deepEqual(calls.delegated[0], {
    uri: "file:///r/other.py",
    kind: "fix",
    instruction: "Fix these diagnostics.",
    range: given[0]!.range,
    diagnostics: [{ message: "x" }],
  });
});

test("worker, model and kind from the quick picks; the workers come from the server for the document", async () => {
  const { ui, calls } = fakeUi();
  await delegateSelection(ui, new History(), { askChoices: true, defaults, onlyWorkers: [] });
  assert.deepEqual(calls.listed, ["file:///r/app.py"]);
  assert.deepEqual(
    calls.offered[0]!.map((i) => i.value),
    [null, "fake", "claude-work", "codex", "old"],
  );
  assert.deepEqual(calls.delegated[0], { uri: "file:///r/app.py", kind: "tests", instruction: "Make it faster", range: RANGE, worker: "codex", model: "o4" });
});

test("without delegate options the server is not asked for its workers", async () => {
  const { ui, calls } = fakeUi();
  await delegateSelection(ui, new History(), { askChoices: false, defaults, onlyWorkers: [] });
  assert.deepEqual(calls.listed, []);
});

test("the worker picker: provider and model, the default marked, why a worker cannot run", () => {
  const items = workerItems(SERVER_WORKERS, [], null);
  assert.deepEqual(items[0], { label: "(default)", description: "the server's default: claude-work", detail: "default_worker in your config", value: null });
  const by = new Map(items.slice(1).map((i) => [i.value, i]));
  assert.deepEqual(by.get("claude-work"), { label: "$(check) claude-work", description: "claude · claude-sonnet-4-5 · default", detail: "Work", value: "claude-work" });
  assert.deepEqual(by.get("fake"), { label: "$(check) fake", description: "fake", value: "fake" });
  assert.deepEqual(by.get("codex"), { label: "codex", description: "codex", detail: "cannot run: codex not installed", value: "codex" });
  assert.equal(by.get("old")?.detail, "disabled");
  // the user's baton.worker setting is what "(default)" runs, and its row says so
  const mine = workerItems(SERVER_WORKERS, [], "fake");
  assert.equal(mine[0]!.description, "baton.worker: fake");
  assert.equal(mine.find((i) => i.value === "fake")!.description, "fake · current");
});

test("the baton.workers setting only narrows the server's list; without the server, its names alone", () => {
  assert.deepEqual(
    workerItems(SERVER_WORKERS, ["codex", "nope"], null).map((i) => i.value),
    [null, "codex"],
  );
  assert.deepEqual(
    workerItems(undefined, ["a", "b"], "b").map((i) => [i.value, i.description]),
    [[null, "baton.worker: b"], ["a", ""], ["b", "current"]],
  );
});

test("a server that cannot list its workers still lets the user delegate to the default", async () => {
  const { ui, calls } = fakeUi({ workers: () => Promise.reject(new Error("no broker")) });
  await delegateSelection(ui, new History(), { askChoices: true, defaults, onlyWorkers: [] });
  assert.deepEqual(calls.offered[0]!.map((i) => i.value), [null]);
  assert.equal(calls.delegated.length, 1);
});

test("readWorkers: the wire answer, and a malformed one refused", () => {
  assert.equal(SERVER_WORKERS.default, "claude-work");
  assert.deepEqual(SERVER_WORKERS.workers[2], {
    name: "codex", provider: "codex", model: null, label: "", enabled: true, allowed: true, canRun: false, problem: "codex not installed", source: "default",
  });
  assert.throws(() => readWorkers({ workers: "fake" }), /workers.workers must be a list/);
  assert.throws(() => readWorkers({ workers: [{ provider: "fake" }] }), /workers\[0\].name must be a string/);
});

test("no file open: an error, nothing delegated", async () => {
  const { ui, calls } = fakeUi({ selection: () => undefined });
  assert.equal(await delegateSelection(ui, new History(), { askChoices: false, defaults, onlyWorkers: [] }), undefined);
  assert.equal(calls.errors.length, 1);
  assert.deepEqual(calls.delegated, []);
});

test("a server refusal is shown, not thrown", async () => {
  const { ui, calls } = fakeUi({ delegate: () => Promise.reject(new Error("the Baton broker is not running")) });
  assert.equal(await delegateSelection(ui, new History(), { askChoices: false, defaults, onlyWorkers: [] }), undefined);
  assert.match(calls.errors[0]!, /could not delegate: the Baton broker is not running/);
});
