/** Claude Code's proposals (tasks with `proposedBy`) and the `baton.claudeIde` setting. */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import * as vscode from "vscode";

import { InlineDecorations } from "../../src/common/inlineDecorations";
import { readTasks } from "../../src/common/protocol";
import { Reviews } from "../../src/common/reviews";
import { readSettings, serverSettings } from "../../src/common/settings";
import { ACCEPT_ALL, REVIEW, TaskList, canReply, canRetry, contextValue, describe, proposerOf, titleOf } from "../../src/common/tasks";
import { TaskView } from "../../src/common/taskView";
import { FakeEditor, MarkdownString, fakeEditor } from "./fakeVscode";
import { URI, proposal, task, twoHunks } from "./fixtures";

const fake = vscode as unknown as { window: { activeTextEditor?: FakeEditor; visibleTextEditors: FakeEditor[] } };

interface Contributes {
  configuration: { properties: Record<string, { type: string; default: unknown; markdownDescription?: string }> };
  menus: Record<string, { command: string; when: string }[]>;
}

const manifest = JSON.parse(readFileSync(join(__dirname, "..", "..", "package.json"), "utf8")) as { contributes: Contributes };

test("baton.claudeIde: a boolean setting, on by default, passed to the server as claudeIde", () => {
  const prop = manifest.contributes.configuration.properties["baton.claudeIde"];
  assert.equal(prop?.type, "boolean");
  assert.equal(prop?.default, true);
  assert.match(prop?.markdownDescription ?? "", /Claude Code/);
  const baton = (s: Record<string, unknown>) => serverSettings(readSettings((k) => s[k])).baton as Record<string, unknown>;
  assert.equal(baton({}).claudeIde, true);
  assert.equal(baton({ claudeIde: false }).claudeIde, false);
  assert.equal(baton({ claudeIde: "no" }).claudeIde, true, "a bad value falls back to the default");
});

test("proposedBy is read from the server's summaries (null when absent)", () => {
  const [p, t] = readTasks({
    tasks: [
      { id: "p", title: "Claude Code: edit app.py", state: "review", worker: "claude-code", next: ["diff", "accept", "reject"], proposedBy: "claude-code" },
      { id: "t", title: "x", state: "review", proposedBy: null },
    ],
  });
  assert.equal(p!.proposedBy, "claude-code");
  assert.equal(t!.proposedBy, null);
});

test("a proposal is named as Claude Code's, shown by who proposed it, without reply or retry", () => {
  const p = proposal("p", "review");
  assert.equal(proposerOf(p), "Claude Code");
  assert.equal(proposerOf(task("t", "review")), undefined);
  assert.equal(titleOf(p), "Claude Code proposes: edit app.py");
  assert.equal(titleOf(task("t", "review")), "task t");
  assert.equal(describe(p), "review — proposed by Claude Code");
  assert.equal(describe(task("t", "review")), "review — fake");
  assert.equal(canReply(p), false);
  assert.equal(canRetry(proposal("p", "cancelled")), false);
  assert.equal(canRetry(task("t", "cancelled")), true);
  assert.equal(canReply(task("t", "needs_input")), true);
  assert.equal(contextValue(p), "task review proposal");
});

test("the task view's menus offer no retry for a withdrawn proposal, and review moves for one in review", () => {
  const items = manifest.contributes.menus["view/item/context"]!;
  const regexOf = (command: string): RegExp => {
    const when = items.find((i) => i.command === command)!.when;
    const m = /viewItem =~ \/(.+)\/$/.exec(when)!;
    return new RegExp(m[1]!);
  };
  const retry = regexOf("baton.client.retry");
  assert.ok(retry.test(contextValue(task("t", "cancelled"))));
  assert.ok(retry.test(contextValue(task("t", "failed"))));
  assert.ok(!retry.test(contextValue(proposal("p", "cancelled"))));
  const reply = regexOf("baton.client.reply");
  assert.ok(reply.test(contextValue(task("t", "needs_input"))));
  assert.ok(!reply.test(contextValue(proposal("p", "review"))));
  assert.ok(regexOf("baton.client.acceptAll").test(contextValue(proposal("p", "review"))));
  assert.ok(regexOf("baton.client.inspect").test(contextValue(proposal("p", "applied"))));
});

test("a proposal arriving in review is announced at once (it is new), naming Claude Code", () => {
  const list = new TaskList();
  const [notice] = list.update([proposal("p", "review")]);
  assert.equal(notice!.kind, "review");
  assert.equal(notice!.message, "Baton: Claude Code proposes: edit app.py — decide its hunks; Claude Code writes what you accept.");
  assert.deepEqual(notice!.actions, [REVIEW, ACCEPT_ALL]);
  assert.deepEqual(list.update([proposal("p", "applied", 2)]), [], "applied: nothing to announce");
});

test("the task view labels a proposal and says who writes the file", () => {
  const list = new TaskList();
  list.reset([proposal("p", "review"), task("t", "review")]);
  const view = new TaskView(list);
  const item = view.getTreeItem({ task: list.get("p")! });
  assert.equal(item.label, "Claude Code proposes: edit app.py");
  assert.equal(item.description, "review — proposed by Claude Code");
  assert.match((item.tooltip as MarkdownString).value, /Proposed by Claude Code: decide its hunks here; Claude Code writes the file/);
  assert.equal(item.contextValue, "task review proposal");
  const other = view.getTreeItem({ task: list.get("t")! });
  assert.doesNotMatch((other.tooltip as MarkdownString).value, /Proposed by/);
  view.dispose();
});

test("a proposal's hover names Claude Code; once applied its decorations are gone for VS Code's reload", () => {
  const reviews = new Reviews();
  const list = new TaskList();
  list.reset([{ ...proposal("t1", "review") }]);
  const deco = new InlineDecorations(reviews, () => true, (id) => {
    const t = list.get(id);
    return t === undefined ? undefined : proposerOf(t);
  });
  const ed = fakeEditor(URI, ["def a():", "    return 1", "", "", "def b():", "    return 2", ""]);
  fake.window.visibleTextEditors = [ed];
  fake.window.activeTextEditor = ed;
  deco.refresh(reviews.update(twoHunks()));
  const hovers = [...ed.decorations.values()].flat().map((o) => o.hoverMessage?.value ?? "");
  assert.ok(hovers.length > 0 && hovers.every((h) => h.includes("Proposed by Claude Code")), hovers.join("\n"));
  // Applied: the summary comes first (the extension drops the task's review), then the
  // clean document is reloaded from disk; its change events must not bring hunks back.
  deco.refresh(reviews.remove("t1"));
  assert.equal([...ed.decorations.values()].flat().length, 0);
  const reloaded = { range: { start: { line: 0, character: 0 }, end: { line: 7, character: 0 } }, text: "def a():\n    return 10\n" };
  assert.equal(reviews.shift(URI, [reloaded]), false);
  assert.deepEqual(reviews.entries(URI), []);
  deco.dispose();
});
