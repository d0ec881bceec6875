import assert from "node:assert/strict";
import { test } from "node:test";

import * as vscode from "vscode";

import { Command } from "../../src/common/constants";
import { InlineDecorations } from "../../src/common/inlineDecorations";
import { Reviews } from "../../src/common/reviews";
import { FakeEditor, fakeEditor } from "./fakeVscode";
import { URI, diff, file, hunk } from "./fixtures";

const fake = vscode as unknown as { window: { activeTextEditor?: FakeEditor; visibleTextEditors: FakeEditor[] } };

test("a hunk proposing several lines: its ghost counts them, its hover offers the peek", () => {
  const reviews = new Reviews();
  const deco = new InlineDecorations(reviews, () => true);
  const ed = fakeEditor(URI, ["def a():", "    return 1", "", "", "def b():", "    return 2", ""]);
  fake.window.visibleTextEditors = [ed];
  fake.window.activeTextEditor = ed;
  const long = hunk("long", 1, "    return 1\n", "    total = 0\n    total += 1\n    return total\n");
  deco.refresh(reviews.update(diff("t1", [file([long, hunk("short", 5, "    return 2\n", "    return 20\n")])])));
  const all = [...ed.decorations.values()].flat();
  const ghosts = all.map((o) => (o as { renderOptions?: { after?: { contentText?: string } } }).renderOptions?.after?.contentText).filter(Boolean);
  assert.deepEqual(ghosts, ["→ total = 0   + 2 more lines", "→ return 20"]);
  const hovers = all.map((o) => o.hoverMessage?.value ?? "");
  const peek = encodeURIComponent(JSON.stringify([{ taskId: "t1", hunkId: "long" }]));
  assert.ok(hovers.some((h) => h.includes(`[Show 3 proposed lines](command:${Command.peekHunk}?${peek})`)), hovers.join("\n"));
  assert.ok(hovers.filter((h) => h.includes("return 20")).every((h) => !h.includes("Show")), "a one-line hunk offers no peek");
  deco.dispose();
});
