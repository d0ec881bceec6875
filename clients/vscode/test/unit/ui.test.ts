/** The status bar and the inline decorations against the fake `vscode` module. */

import assert from "node:assert/strict";
import { test } from "node:test";

import * as vscode from "vscode";

import { CONTEXT_HAS_HUNKS, Command } from "../../src/common/constants";
import { InlineDecorations } from "../../src/common/inlineDecorations";
import { Reviews } from "../../src/common/reviews";
import { StatusBar } from "../../src/common/statusBar";
import { FakeEditor, fakeEditor, recorded } from "./fakeVscode";
import { URI, twoHunks } from "./fixtures";

const fake = vscode as unknown as { window: { activeTextEditor?: FakeEditor; visibleTextEditors: FakeEditor[] } };
const APP = ["def a():", "    return 1", "", "", "def b():", "    return 2", ""];

test("the status bar item shows the counts, warns on needs-input, and opens the task list", () => {
  const bar = new StatusBar();
  const item = recorded.statusItems.at(-1)!;
  assert.equal(item.shown, true);
  assert.equal(item.command, Command.showTasks);
  assert.match(item.text, /loading~spin/);
  bar.setServer("running");
  assert.equal(item.text, "$(check) Baton");
  bar.setCounts({ running: 1, needsInput: 1, review: 0, failed: 0 });
  assert.equal(item.text, "Baton $(sync~spin) 1 $(question) 1");
  assert.equal((item.backgroundColor as { id: string }).id, "statusBarItem.warningBackground");
  bar.setCounts({ running: 0, needsInput: 0, review: 0, failed: 0 });
  assert.equal(item.backgroundColor, undefined);
  bar.dispose();
  assert.equal(item.shown, false);
});

function painted(ed: FakeEditor) {
  const out: { type: number; line: number; text?: string }[] = [];
  for (const [type, opts] of ed.decorations) {
    const n = recorded.decorationTypes.findIndex((t) => t === type);
    for (const o of opts) out.push({ type: n, line: o.range.start.line, text: o.renderOptions?.after?.contentText });
  }
  return out.sort((a, b) => a.type - b.type || a.line - b.line);
}

test("final hunks: removed lines and ghost text in the editor showing the file, context key set", async () => {
  recorded.decorationTypes.length = 0;
  const reviews = new Reviews();
  const deco = new InlineDecorations(reviews, () => true);
  const ed = fakeEditor(URI, APP);
  const other = fakeEditor("file:///repo/other.py", ["x"]);
  fake.window.visibleTextEditors = [ed, other];
  fake.window.activeTextEditor = ed;
  deco.refresh(reviews.update(twoHunks()));
  await Promise.resolve();
  // Types 0/1 are the final removed/added kinds, 2/3 the draft ones.
  assert.deepEqual(painted(ed), [
    { type: 0, line: 1, text: undefined },
    { type: 0, line: 5, text: undefined },
    { type: 1, line: 1, text: "→ return 10" },
    { type: 1, line: 5, text: "→ return 20" },
  ]);
  assert.equal(other.decorations.size, 0, "an editor on another file is not touched");
  assert.equal(recorded.context.get(CONTEXT_HAS_HUNKS), true);

  // The task is applied: everything is cleared and the key goes off.
  deco.refresh(reviews.update(twoHunks("applied")));
  assert.deepEqual(painted(ed), []);
  assert.equal(recorded.context.get(CONTEXT_HAS_HUNKS), false);
  deco.dispose();
  assert.ok(recorded.decorationTypes.every((t) => t.disposed));
});

test("a draft is drawn with the draft kinds and does not enable the review keys", () => {
  recorded.decorationTypes.length = 0;
  recorded.context.clear();
  const reviews = new Reviews();
  const deco = new InlineDecorations(reviews, () => true);
  const ed = fakeEditor(URI, APP);
  fake.window.visibleTextEditors = [ed];
  fake.window.activeTextEditor = ed;
  deco.refresh(reviews.update(twoHunks("running", false)));
  assert.deepEqual(new Set(painted(ed).map((p) => p.type)), new Set([2, 3]));
  assert.equal(recorded.context.get(CONTEXT_HAS_HUNKS), false);
});

test("the inlineDiff setting off draws nothing", () => {
  recorded.decorationTypes.length = 0;
  const reviews = new Reviews();
  const deco = new InlineDecorations(reviews, () => false);
  const ed = fakeEditor(URI, APP);
  fake.window.visibleTextEditors = [ed];
  deco.refresh(reviews.update(twoHunks()));
  assert.deepEqual(painted(ed), []);
});
