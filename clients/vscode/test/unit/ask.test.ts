/** "Ask Baton…": the code action (it carries no question) goes to the client's input box, the
 * question to the server's `baton.ask`; a dismissed box sends nothing. */

import assert from "node:assert/strict";
import { test } from "node:test";

import { ASK, ask, where } from "../../src/common/ask";
import { routeDelegateAction } from "../../src/common/codeActions";
import type { App } from "../../src/common/commands";

const RANGE = { start: { line: 2, character: 0 }, end: { line: 5, character: 0 } };

function server(sent: [string, unknown][]): Pick<App, "server"> {
  const request = (command: string, args?: object): Promise<unknown> => {
    sent.push([command, args]);
    return Promise.resolve({ taskId: "t1", state: "queued", title: "What?" });
  };
  return { server: { request } } as unknown as Pick<App, "server">;
}

test("the code action without a question is routed to the client's ask", () => {
  const action = { title: "Ask Baton…", command: { title: "Ask Baton…", command: "baton.ask", arguments: [{ uri: "file:///w/app.py", range: RANGE }] } };
  const routed = routeDelegateAction(action) as { command: { command: string; arguments: unknown[] } };
  assert.equal(routed.command.command, ASK);
  assert.deepEqual(routed.command.arguments, [{ uri: "file:///w/app.py", range: RANGE }]);
  const given = { title: "Ask", command: { title: "Ask", command: "baton.ask", arguments: [{ uri: "file:///w/a.py", question: "Why?" }] } };
  assert.equal((routeDelegateAction(given as never) as { command: { command: string } }).command.command, "baton.ask");
});

test("the question asked for goes to baton.ask; a dismissed box sends nothing", async () => {
  const sent: [string, unknown][] = [];
  let shown = "";
  const id = await ask(server(sent), { uri: "file:///w/app.py", range: RANGE }, (at) => {
    shown = at;
    return Promise.resolve("What does it do?");
  });
  assert.equal(id, "t1");
  assert.equal(shown, "app.py:3-5");
  assert.deepEqual(sent, [["baton.ask", { uri: "file:///w/app.py", range: RANGE, question: "What does it do?" }]]);
  const none: [string, unknown][] = [];
  assert.equal(await ask(server(none), { uri: "file:///w/app.py" }, () => Promise.resolve(undefined)), undefined);
  assert.equal(await ask(server(none), { uri: "file:///w/app.py" }, () => Promise.resolve("  ")), undefined);
  assert.deepEqual(none, []);
  assert.equal(where({ uri: "file:///w/app.py" }), "app.py");
});
