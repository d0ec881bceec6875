import assert from "node:assert/strict";
import test from "node:test";

import { readDetail, readLive, readSnapshot, readTask } from "../../src/api";
import { duration, money, tokens } from "../../src/format";
import { Board, dayStart, dayTrend, workerRows } from "../../src/model";
import { spans } from "../../src/timeline";

const DAY = 86_400;
const now = 1_790_000_000;

function task(id: string, worker: string, createdAt: number, extra: Record<string, unknown> = {}) {
  return readTask({ id, worker, createdAt, state: "review", title: id, ...extra });
}

test("the snapshot reader keeps what it knows and drops what it cannot read", () => {
  const snap = readSnapshot({
    now,
    window: "7d",
    since: now - 7 * DAY,
    csrf: "c",
    actions: true,
    tasks: [
      { id: "t-1", worker: "a", createdAt: now - 10, usage: { input: 5, cached: 2, output: 3, cost: 0.5, costSource: "estimated" } },
      { title: "no id" },
      "junk",
    ],
    workers: [{ worker: "a", tasks: 1, input: 5, cached: 2, output: 3, tokens: 10, days: [{ day: "2026-12-01", tasks: 1 }] }],
  });
  assert.equal(snap.window, "7d");
  assert.equal(snap.actions, true);
  assert.deepEqual(snap.tasks.map((t) => t.id), ["t-1"]);
  assert.deepEqual(snap.tasks[0]?.usage, { input: 5, cached: 2, output: 3, tokens: 10, cost: 0.5, estimated: true });
  assert.equal(snap.workers[0]?.usage.tokens, 10);
  assert.throws(() => readSnapshot([]));
});

test("live frames: known ones are read, the rest ignored", () => {
  const ev = readLive('{"type":"events","events":[{"taskId":"t-1","seq":5,"ts":1,"type":"text","data":{"text":"hi","delta":true}}]}');
  assert.equal(ev?.type, "events");
  assert.equal(readLive("not json"), null);
  assert.equal(readLive('{"type":"later"}'), null);
  assert.deepEqual(readLive('{"type":"overflow"}'), { type: "overflow" });
});

test("the detail reader reads the diff hunk by hunk", () => {
  const d = readDetail({
    task: { id: "t-1" },
    transcript: ["# t", 3],
    diff: { final: true, files: [{ path: "a.py", status: "modified", hunks: [{ id: "h1", oldStart: 1, newStart: 1, oldText: "a\n", newText: "b\n" }] }] },
    seq: 9,
  });
  assert.deepEqual(d.transcript, ["# t"]);
  assert.equal(d.diff?.files[0]?.hunks[0]?.newText, "b\n");
  assert.equal(d.seq, 9);
  assert.throws(() => readDetail({}));
});

test("per-worker sums count the window's tasks, costs only where known", () => {
  const rows = workerRows([
    task("t-1", "a", now, { usage: { input: 10, cached: 1, output: 2, cost: 0.25, costSource: "reported" } }),
    task("t-2", "a", now, { state: "running", usage: { input: 5, output: 1 } }),
    task("t-3", "b", now),
  ]);
  assert.deepEqual(
    rows.map((r) => [r.worker, r.tasks, r.input, r.cached, r.output, r.tokens, r.cost]),
    [
      ["a", 2, 15, 1, 3, 19, 0.25],
      ["b", 1, 0, 0, 0, 0, null],
    ],
  );
  assert.deepEqual(rows[0]?.states, { review: 1, running: 1 });
});

test("the board counts tasks created in the window and keeps live updates", () => {
  const b = new Board();
  b.load(
    readSnapshot({ now, since: now - 3600, window: "1h", tasks: [{ id: "old", worker: "a", createdAt: now - 7200, state: "running" }, { id: "new", worker: "a", createdAt: now - 60 }] }),
    now,
  );
  assert.deepEqual(b.counted().map((t) => t.id), ["new"]);
  b.update([task("newer", "b", now - 1)]);
  assert.deepEqual(b.list().map((t) => t.id), ["newer", "new", "old"]);
  assert.equal(b.elapsed(b.tasks.get("old")!, now + 10), 7210);
});

test("the trend has every day of the window, each task on its creation day", () => {
  const since = dayStart(now) - 2 * DAY;
  const t = dayTrend([task("t-1", "a", now, { usage: { input: 7, cost: 1 } }), task("t-2", "a", since + 5, { usage: { output: 3 } })], since, now);
  assert.equal(t.days.length, 3);
  assert.deepEqual(t.workers.get("a")?.map((p) => p.tokens), [3, 0, 7]);
});

test("timeline spans are clipped to the window and an open one runs to now", () => {
  const t = task("t-1", "a", now - 100, {
    timeline: [
      { state: "queued", phase: "queued", start: now - 100, end: now - 90 },
      { state: "running", phase: "running", start: now - 90, end: null },
    ],
  });
  assert.deepEqual(
    spans(t, now - 95, now).map((s) => [s.phase, s.start, s.end]),
    [
      ["queued", now - 95, now - 90],
      ["running", now - 90, now],
    ],
  );
});

test("a row pushed before the snapshot stays when it is newer; an older one does not", () => {
  const b = new Board();
  b.update([task("t-1", "a", now - 50, { state: "running", updatedAt: now - 1 }), task("t-2", "a", now - 40, { state: "running", updatedAt: now - 30 })]);
  b.load(
    readSnapshot({
      now,
      since: now - 3600,
      tasks: [
        { id: "t-1", worker: "a", createdAt: now - 50, state: "preparing", updatedAt: now - 20 },
        { id: "t-2", worker: "a", createdAt: now - 40, state: "review", updatedAt: now - 2 },
      ],
    }),
    now,
  );
  assert.deepEqual(b.list().map((t) => [t.id, t.state]), [["t-2", "review"], ["t-1", "running"]]);
  b.update([task("t-2", "a", now - 40, { state: "running", updatedAt: now - 30 })]); // an answer overtaken
  assert.equal(b.tasks.get("t-2")?.state, "review");
});

test("the live socket's hello, transcript and error frames", () => {
  assert.deepEqual(readLive('{"type":"hello","now":5}'), { type: "hello", now: 5 });
  assert.deepEqual(readLive('{"type":"transcript","taskId":"t-1","seq":4,"start":2,"lines":["a",3,"b"]}'), {
    type: "transcript",
    taskId: "t-1",
    seq: 4,
    start: 2,
    lines: ["a", "b"],
  });
  assert.equal(readLive('{"type":"error","taskId":"x","message":"no task"}')?.type, "error");
});

test("formats", () => {
  assert.equal(tokens(58_900), "58.9k");
  assert.equal(money(0.00123, true), "~$0.0012");
  assert.equal(money(null), "-");
  assert.equal(duration(65), "1 m 05 s");
});

test("the timeline spans the shown tasks, not the whole window", () => {
  const b = new Board();
  b.load(readSnapshot({ now, since: now - 30 * DAY, window: "30d", tasks: [{ id: "a", worker: "w", createdAt: now - 100 }] }), now);
  const s = b.span(now);
  assert.ok(s.from < now - 100 && s.from > now - 110, String(s.from));
  assert.equal(s.to, now);
});
