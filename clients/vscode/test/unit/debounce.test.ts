import assert from "node:assert/strict";
import { mock, test } from "node:test";

import { Debounce, KeyedDebounce } from "../../src/common/debounce";

test("a burst per key runs once, after the last call; keys do not delay each other", (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const ran: string[] = [];
  const d = new KeyedDebounce<string>(400, (k) => ran.push(k));
  d.schedule("t1");
  t.mock.timers.tick(300);
  d.schedule("t1"); // restarts t1's wait
  d.schedule("t2");
  t.mock.timers.tick(399);
  assert.deepEqual(ran, []);
  assert.equal(d.pending("t1"), true);
  t.mock.timers.tick(1);
  assert.deepEqual(ran.sort(), ["t1", "t2"]);
  assert.equal(d.pending("t1"), false);
  t.mock.timers.tick(1000);
  assert.equal(ran.length, 2, "each ran once");
});

test("dispose drops what is still waiting", (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const run = mock.fn();
  const d = new KeyedDebounce<string>(150, run);
  d.schedule("a");
  d.dispose();
  t.mock.timers.tick(1000);
  assert.equal(run.mock.callCount(), 0);
  assert.equal(d.pending("a"), false);
});

test("a single debounce runs once with the latest value; dispose cancels it", (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const ran: string[] = [];
  const d = new Debounce<string>(1000, (why) => ran.push(why));
  d.schedule("settings changed");
  t.mock.timers.tick(500);
  d.schedule("the Python interpreter changed");
  t.mock.timers.tick(999);
  assert.deepEqual(ran, []);
  t.mock.timers.tick(1);
  assert.deepEqual(ran, ["the Python interpreter changed"]);
  d.schedule("again");
  d.dispose();
  t.mock.timers.tick(2000);
  assert.deepEqual(ran, ["the Python interpreter changed"]);
});
