import assert from "node:assert/strict";
import { test } from "node:test";

import { Requester } from "../../src/common/diffFollow";
import { uriKey } from "../../src/common/reviews";
import { UndoWatch } from "../../src/common/undo";
import { DocumentText, UndoLookup } from "../../src/common/undoLookup";
import { URI, twoHunks } from "./fixtures";

const OLD = "def a():\n    return 1\n\n\ndef b():\n    return 2\n";
const NEW = "def a():\n    return 10\n\n\ndef b():\n    return 20\n";

function applied(): ReturnType<typeof twoHunks> {
  const d = twoHunks("applied");
  for (const h of d.files[0]!.hunks) h.state = "accepted";
  return d;
}

class FakeServer implements Requester {
  asked: { command: string; args?: object }[] = [];
  answer: (command: string) => Promise<unknown> = (command) =>
    Promise.resolve(command === "baton.reopen" ? { state: "review", reopened: ["h1", "h2"] } : {});
  request<T>(command: string, args?: object): Promise<T> {
    this.asked.push({ command, args });
    return this.answer(command) as Promise<T>;
  }
}

class Doc implements DocumentText {
  constructor(
    public text: string,
    public version: number,
    readonly uri = { toString: () => URI },
  ) {}
  getText(): string {
    return this.text;
  }
}

const flush = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

test("an edit of a watched document that brings the old text back asks for a reopen, debounced", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const undo = new UndoWatch();
  const keys = undo.update(applied());
  assert.deepEqual(keys, [uriKey(URI)]);
  const doc = new Doc(NEW, 2);
  const server = new FakeServer();
  const logged: unknown[][] = [];
  const lookup = new UndoLookup(undo, (key) => (key === uriKey(URI) ? doc : undefined), () => server, 150, (...p) => logged.push(p));

  doc.text = OLD;
  doc.version = 3;
  lookup.edited(URI);
  lookup.edited(URI);
  t.mock.timers.tick(149);
  assert.deepEqual(server.asked, []);
  t.mock.timers.tick(1);
  assert.deepEqual(server.asked, [{ command: "baton.reopen", args: { taskId: "t1", hunkIds: ["h1", "h2"] } }]);
  await flush();
  assert.deepEqual(logged, [["task t1: baton.reopen h1, h2 → review"]]);
  // when the request ends the document is looked at again: the same version asks nothing
  t.mock.timers.tick(150);
  await flush();
  assert.equal(server.asked.length, 1);
});

test("an unwatched document, a closed one, or no server asks nothing; a failure is logged", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const undo = new UndoWatch();
  const server = new FakeServer();
  let doc: Doc | undefined = new Doc(OLD, 3);
  let current: FakeServer | undefined = server;
  const logged: unknown[][] = [];
  const lookup = new UndoLookup(undo, () => doc, () => current, 150, (...p) => logged.push(p));
  lookup.edited(URI); // nothing watched
  t.mock.timers.tick(1000);
  assert.deepEqual(server.asked, []);

  undo.update(applied());
  doc = undefined; // closed
  lookup.edited(URI);
  t.mock.timers.tick(1000);
  doc = new Doc(OLD, 3);
  current = undefined; // stopped
  lookup.look(uriKey(URI));
  t.mock.timers.tick(1000);
  assert.deepEqual(server.asked, []);

  current = server;
  server.answer = () => Promise.reject(new Error("no such task"));
  lookup.look(uriKey(URI));
  t.mock.timers.tick(150);
  await flush();
  assert.equal(server.asked.length, 1);
  assert.equal(logged[0]![0], "baton.reopen t1:");
  lookup.dispose();
});
