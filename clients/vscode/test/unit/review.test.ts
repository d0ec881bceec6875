import assert from "node:assert/strict";
import { test } from "node:test";

import { routeDelegateAction } from "../../src/common/codeActions";
import { Command } from "../../src/common/constants";
import { HunkArgs } from "../../src/common/protocol";
import { Cursor, ReviewDeps, decide, navigate, targets } from "../../src/common/review";
import { Reviews } from "../../src/common/reviews";
import { URI, diff, file, hunk, twoHunks } from "./fixtures";

function deps(reviews: Reviews, cursor: Cursor | undefined) {
  const calls = { executed: [] as [string, HunkArgs][], revealed: [] as [string, number][], info: [] as string[] };
  const d: ReviewDeps = {
    reviews,
    cursor: () => cursor,
    execute: (command, args) => {
      calls.executed.push([command, args]);
      return Promise.resolve({});
    },
    reveal: (uri, line) => calls.revealed.push([uri, line]),
    info: (m) => calls.info.push(m),
  };
  return { d, calls };
}

function reviews(): Reviews {
  const r = new Reviews();
  r.update(twoHunks());
  return r;
}

test("accept with the cursor on a hunk accepts that hunk only", async () => {
  const { d, calls } = deps(reviews(), { uri: URI, line: 5 });
  assert.equal(await decide(d, "accept", "hunk"), 1);
  assert.deepEqual(calls.executed, [["baton.accept", { taskId: "t1", hunkIds: ["h2"] }]]);
});

test("the cursor off any hunk: a hint, no server call", async () => {
  const { d, calls } = deps(reviews(), { uri: URI, line: 3 });
  assert.equal(await decide(d, "reject", "hunk"), 0);
  assert.deepEqual(calls.executed, []);
  assert.match(calls.info[0]!, /not on a hunk/);
});

test("reject all covers every pending hunk of the document, per task", () => {
  const r = reviews();
  r.update(diff("t2", [file([hunk("z", 3, "\n", "x\n")])]));
  assert.deepEqual(targets(r, { uri: URI, line: 0 }, "all"), [
    { taskId: "t1", hunkIds: ["h1", "h2"] },
    { taskId: "t2", hunkIds: ["z"] },
  ]);
});

test("a lens drawn before an update may name a decided hunk: it is dropped, not sent", async () => {
  const r = reviews();
  const d2 = twoHunks();
  d2.files[0]!.hunks[0]!.state = "accepted";
  r.update(d2);
  assert.deepEqual(targets(r, undefined, "hunk", [{ taskId: "t1", hunkIds: ["h1", "h2"] }]), [{ taskId: "t1", hunkIds: ["h2"] }]);
  const { d, calls } = deps(r, undefined);
  assert.equal(await decide(d, "reject", "hunk", { taskId: "t1", hunkIds: ["h1"] }), 0);
  assert.match(calls.info[0]!, /already decided/);
  assert.deepEqual(calls.executed, []);
});

test("arguments for a task the client has no diff of go to the server as given", () => {
  assert.deepEqual(targets(new Reviews(), undefined, "all", { taskId: "t7" }), [{ taskId: "t7" }]);
});

test("next and previous hunk move the cursor in the editor already showing the file", () => {
  const { d, calls } = deps(reviews(), { uri: URI, line: 2 });
  assert.equal(navigate(d, "next")?.hunk.id, "h2");
  assert.equal(navigate(d, "previous")?.hunk.id, "h1");
  assert.deepEqual(calls.revealed, [[URI, 5], [URI, 1]]);
  const none = deps(new Reviews(), { uri: URI, line: 0 });
  assert.equal(navigate(none.d, "next"), undefined);
  assert.equal(none.calls.info.length, 1);
});

test("the server's instruction-less delegate action opens the client's picker", () => {
  const arg = { uri: URI, range: {}, kind: "delegate" };
  const routed = routeDelegateAction({ title: "Baton: Delegate selection…", command: { title: "x", command: "baton.delegate", arguments: [arg] } });
  assert.equal((routed as { command: { command: string } }).command.command, Command.delegateSelection);
  const fix = { title: "Fix", command: { title: "x", command: "baton.delegate", arguments: [{ ...arg, instruction: "Fix these diagnostics." }] } };
  assert.equal((routeDelegateAction(fix) as { command: { command: string } }).command.command, "baton.delegate");
  const plain = { title: "t", command: "other" };
  assert.equal(routeDelegateAction(plain), plain);
});

test("the server's text-less reply action opens the client's reply box", () => {
  const ask = { title: "Baton: Reply to t", command: { title: "x", command: "baton.reply", arguments: [{ taskId: "abcd" }] } };
  const routed = routeDelegateAction(ask) as { command: { command: string; arguments: unknown[] } };
  assert.equal(routed.command.command, Command.reply);
  assert.deepEqual(routed.command.arguments, [{ taskId: "abcd" }]);
  const given = { title: "r", command: { title: "x", command: "baton.reply", arguments: [{ taskId: "abcd", text: "42" }] } };
  assert.equal((routeDelegateAction(given) as { command: { command: string } }).command.command, "baton.reply");
});
