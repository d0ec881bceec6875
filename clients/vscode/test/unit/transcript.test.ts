/** The live transcript: the server's lines kept per task, changes applied in order (a gap
 * asks again), the read-only `baton-transcript:` document fed from them, and the log's
 * lifecycle lines. */

import assert from "node:assert/strict";
import { test } from "node:test";

import { ProtocolError } from "../../src/common/protocol";
import { decisionLine, delegatedLine, moveLine, startedMessage, stateLine } from "../../src/common/lifecycle";
import { Transcripts, readTranscript, readTranscriptChange } from "../../src/common/transcript";
import { EndFollow, TranscriptView, taskOfTranscript, transcriptUri } from "../../src/common/transcriptView";
import { task } from "./fixtures";
import { TabInputText, workspaceListeners } from "./fakeVscode";

const HEAD = ["# Make it so", "", "task t1 · fake · delegate"];

function opened(): Transcripts {
  const m = new Transcripts();
  m.open("t1");
  m.reset({ taskId: "t1", seq: 4, lines: [...HEAD, "", "One."], following: true });
  return m;
}

test("a change replaces the lines from its start", () => {
  const m = opened();
  assert.equal(m.apply({ taskId: "t1", since: 4, seq: 6, start: 4, lines: ["One. Two.", "", "- edit `a.py`"] }), "applied");
  assert.equal(m.text("t1"), [...HEAD, "", "One. Two.", "", "- edit `a.py`"].join("\n") + "\n");
  assert.equal(m.apply({ taskId: "t1", since: 6, seq: 7, start: 6, lines: ["- edit `a.py` ✓"] }), "applied");
  assert.equal(m.lineCount("t1"), 7);
});

test("an old change is dropped, a gap asks for the whole transcript again", () => {
  const m = opened();
  assert.equal(m.apply({ taskId: "t1", since: 2, seq: 4, start: 0, lines: ["x"] }), "ignored");
  assert.equal(m.apply({ taskId: "t1", since: 5, seq: 6, start: 4, lines: ["x"] }), "reload");
  // while the answer is awaited, changes wait for it
  assert.equal(m.apply({ taskId: "t1", since: 6, seq: 7, start: 4, lines: ["y"] }), "ignored");
  m.reset({ taskId: "t1", seq: 7, lines: [...HEAD, "", "One. Two."], following: true });
  assert.equal(m.apply({ taskId: "t1", since: 7, seq: 8, start: 9, lines: ["past the end"] }), "reload");
  assert.equal(m.apply({ taskId: "other", since: 0, seq: 1, start: 0, lines: [] }), "ignored");
});

test("the readers check the server's JSON", () => {
  assert.deepEqual(readTranscript({ taskId: "t1", seq: 3, lines: ["a"], following: true }), {
    taskId: "t1",
    seq: 3,
    lines: ["a"],
    following: true,
  });
  assert.throws(() => readTranscript({ taskId: "t1", seq: 3, lines: [1] }), ProtocolError);
  assert.throws(() => readTranscriptChange({ taskId: "t1", since: 1, seq: 2, start: -1, lines: [] }), ProtocolError);
  assert.equal(readTranscriptChange({ taskId: "t1", since: 1, seq: 2, start: 0, lines: ["z"] }).start, 0);
});

test("the document is a read-only transcript: loaded on demand, changed live, unfollowed on close", async () => {
  const asked: { command: string; args: object }[] = [];
  let answer: (v: unknown) => void = () => undefined;
  const view = new TranscriptView((command, args) => {
    asked.push({ command, args });
    return new Promise((resolve) => (answer = resolve));
  });
  const fired: string[] = [];
  view.onDidChange((uri) => fired.push(uri.toString()));
  const uri = transcriptUri("t1", "Make it: so/now");
  assert.equal(uri.scheme, "baton-transcript");
  assert.equal(uri.path, "/t1/Transcript: Make it so now.md"); // Markdown by its name
  assert.equal(taskOfTranscript(uri as never), "t1");

  assert.equal(view.provideTextDocumentContent(uri as never), "Loading the transcript…\n");
  assert.deepEqual(asked, [{ command: "baton.transcript", args: { taskId: "t1", follow: true } }]);
  answer({ taskId: "t1", seq: 4, lines: [...HEAD, "", "One."], following: true });
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(fired, [uri.toString()]);
  assert.equal(view.provideTextDocumentContent(uri as never), [...HEAD, "", "One."].join("\n") + "\n");
  assert.equal(asked.length, 1, "asked once");

  view.onChange({ taskId: "t1", since: 4, seq: 5, start: 4, lines: ["One. Two."] });
  assert.equal(fired.length, 2);
  assert.match(view.provideTextDocumentContent(uri), /One\. Two\.\n$/);

  // its last tab closes (VS Code keeps the document a while): no longer followed
  for (const l of workspaceListeners.tabs) l({ closed: [{ input: new TabInputText(uri) }] });
  assert.deepEqual(asked.at(-1), { command: "baton.transcript", args: { taskId: "t1", follow: false } });
  for (const l of workspaceListeners.close) l({ uri });
  assert.equal(asked.length, 2, "asked to stop once");
  view.onChange({ taskId: "t1", since: 5, seq: 6, start: 4, lines: ["gone"] });
  assert.equal(fired.length, 2, "a closed transcript is not followed");
  view.dispose();
});

test("a transcript shown at its end follows it until the user scrolls up, whatever the view lags", () => {
  const f = new EndFollow();
  assert.equal(f.grew("d"), false, "not shown: not followed");
  f.shown("d");
  assert.equal(f.grew("d"), true);
  assert.equal(f.grew("d"), true, "a second change before the view caught up");
  f.scrolled("d", 0, 14, 19); // the view, late, still at the first reveal
  assert.equal(f.follows("d"), true, "a lagging view is not the user scrolling away");
  f.scrolled("d", 5, 19, 19);
  f.scrolled("d", 10, 29, 40); // later reveals come in late too
  assert.equal(f.grew("d"), true);
  f.scrolled("d", 10, 20, 40); // a smaller window: the same top
  assert.equal(f.follows("d"), true, "fewer lines shown is no scroll");
  f.scrolled("d", 2, 16, 40); // the user scrolled up
  assert.equal(f.grew("d"), false, "scrolled up: the end is not revealed");
  f.scrolled("d", 30, 44, 44); // back at the end
  assert.equal(f.grew("d"), true, "at the end again: follows");
  f.forget("d");
  assert.equal(f.follows("d"), false);
});

test("the log says each step of a task's life", () => {
  const t = (state: string, updatedAt: number, message = "") => ({ ...task("t1", state, updatedAt, message), title: "Make it so" });
  assert.equal(delegatedLine({ taskId: "t1", title: "Make it so", state: "queued" }, "fake"), 'task t1 "Make it so": delegated to fake (queued)');
  assert.equal(stateLine(undefined, t("queued", 1)), 'task t1 "Make it so": queued');
  assert.equal(stateLine(t("preparing", 1), { ...t("running", 2), worker: "fake" }), 'task t1 "Make it so": started (fake) (was preparing)');
  assert.equal(stateLine(t("running", 2), t("review", 3, "ready for review")), 'task t1 "Make it so": review (was running) — ready for review');
  assert.equal(stateLine(t("review", 3), t("applied", 4, "applied")), 'task t1 "Make it so": settled: applied (was review)');
  assert.equal(stateLine(t("review", 3), t("review", 4)), undefined);
  assert.equal(stateLine(t("review", 5), t("running", 4)), undefined, "an older summary says nothing");
  assert.equal(stateLine(undefined, t("applied", 1)), undefined, "a listing of old tasks says nothing");
  const conflict = { applied: ["h1"], conflicts: [{ hunkId: "h2", reason: "conflicts with your changes near lines 2-3" }], state: "review" };
  assert.equal(
    decisionLine("accept", "t1", conflict, "Make it so"),
    'task t1 "Make it so": accept: 1 hunk(s) applied; 1 conflict: h2 (conflicts with your changes near lines 2-3); task review',
  );
  assert.equal(decisionLine("reject", "t1", { rejected: ["h1", "h2"], state: "rejected" }), "task t1: rejected 2 hunk(s); task rejected");
  assert.equal(moveLine("cancel", "t1", { state: "cancelled" }), "task t1: cancel asked (now cancelled)");
});

test("a delegation that started says so with its title and id", () => {
  assert.equal(startedMessage({ taskId: "t1", title: "Make it so", state: "queued" }, "fake"), 'Baton: started "Make it so" (task t1) with fake.');
  assert.equal(startedMessage({ taskId: "t1", title: "", state: "queued" }, null), "Baton: started (task t1).");
  assert.equal(startedMessage({ taskId: "t1", title: "Both", taskIds: ["t1", "t2"] }, null), 'Baton: started "Both" (tasks t1, t2).');
  assert.equal(startedMessage({ taskId: null, cancelled: true }), undefined);
});
