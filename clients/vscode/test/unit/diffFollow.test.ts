import assert from "node:assert/strict";
import { test } from "node:test";

import { DiffFollow, Requester } from "../../src/common/diffFollow";
import { Reviews } from "../../src/common/reviews";
import { URI, twoHunks } from "./fixtures";

/** A recording server: answers `baton.diff` with `answer` (or fails with it). */
class FakeServer implements Requester {
  asked: { command: string; args?: object }[] = [];
  constructor(private readonly answer: unknown) {}
  request<T>(command: string, args?: object): Promise<T> {
    this.asked.push({ command, args });
    return this.answer instanceof Error ? Promise.reject(this.answer) : Promise.resolve(this.answer as T);
  }
}

const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

// One line inserted above both hunks.
const INSERT = [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, text: "# new\n" }];

test("an edit above the hunks moves them at once and asks for the server's placement once, later", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const reviews = new Reviews();
  reviews.update(twoHunks());
  const placed = twoHunks();
  placed.files[0]!.hunks[0]!.range.start.line = 2;
  const server = new FakeServer(placed);
  const redrawn: (Set<string> | undefined)[] = [];
  const follow = new DiffFollow(reviews, () => server, (keys) => redrawn.push(keys), 400);

  follow.edited(URI, INSERT);
  follow.edited(URI, INSERT); // a burst of edits: one request
  assert.equal(reviews.task("t1")!.files[0]!.hunks[0]!.range.start.line, 3, "moved by the two lines");
  assert.equal(redrawn.length, 2);
  t.mock.timers.tick(399);
  assert.deepEqual(server.asked, []);
  t.mock.timers.tick(1);
  assert.deepEqual(server.asked, [{ command: "baton.diff", args: { taskId: "t1" } }]);
  await flush();
  assert.equal(redrawn.length, 3, "the server's placement is drawn");
  assert.equal(reviews.task("t1")!.files[0]!.hunks[0]!.range.start.line, 2);
});

test("an edit that moves no hunk asks nothing; a task gone meanwhile is not fetched", (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const reviews = new Reviews();
  const server = new FakeServer(twoHunks());
  const follow = new DiffFollow(reviews, () => server, () => undefined, 400);
  follow.edited(URI, INSERT); // nothing drawn in it
  t.mock.timers.tick(1000);
  assert.deepEqual(server.asked, []);

  reviews.update(twoHunks());
  follow.edited(URI, INSERT);
  reviews.remove("t1"); // the task settled before the refetch
  t.mock.timers.tick(1000);
  assert.deepEqual(server.asked, []);
});

test("a failed refetch is logged, not thrown; without a server nothing is asked; dispose cancels", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const reviews = new Reviews();
  reviews.update(twoHunks());
  const logged: unknown[][] = [];
  const failing = new FakeServer(new Error("the Baton server is not running"));
  let current: Requester | undefined = failing;
  const follow = new DiffFollow(reviews, () => current, () => undefined, 400, (...parts) => logged.push(parts));
  follow.edited(URI, INSERT);
  t.mock.timers.tick(400);
  await flush();
  assert.equal(logged.length, 1);
  assert.equal(logged[0]![0], "baton.diff t1:");

  current = undefined;
  follow.edited(URI, INSERT);
  t.mock.timers.tick(400);
  await flush();
  assert.equal(failing.asked.length, 1, "no server: nothing asked");

  current = failing;
  follow.edited(URI, INSERT);
  follow.dispose();
  t.mock.timers.tick(1000);
  assert.equal(failing.asked.length, 1, "disposed: nothing asked");
});
