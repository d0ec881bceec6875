import { strict as assert } from "node:assert";
import { test } from "node:test";

import { INSPECT, RESOLVE_ACTIONS, SHOW_DIFF, acceptReport, savedNote } from "../../src/common/acceptReport";

test("an accept that applied everything reports nothing", () => {
  assert.equal(acceptReport({ applied: ["a"], conflicts: [], refused: [], notApplied: [] }, "Tidy"), undefined);
  assert.equal(acceptReport(null, "Tidy"), undefined);
});

test("a conflict names the task by its title, with Show diff and Inspect", () => {
  const r = acceptReport({ taskId: "8kd0m2", applied: [], conflicts: [{ hunkId: "h1", reason: "near lines 3-4" }] }, "Simplify the loop");
  assert.ok(r);
  assert.equal(r.message, 'Baton: "Simplify the loop": 1 hunk conflicts with your edits and stays pending.');
  assert.ok(!r.message.includes("8kd0m2"));
  assert.deepEqual(r.actions, [...RESOLVE_ACTIONS, SHOW_DIFF, INSPECT]);
  assert.deepEqual(r.conflicts, ["h1"]);
});

test("refusals and edits not applied are said with their first reason", () => {
  const r = acceptReport(
    {
      conflicts: [{ hunkId: "a" }, { hunkId: "b" }],
      refused: [{ hunkId: "c", reason: "outside the scope" }],
      notApplied: [{ hunkId: "d", reason: "the editor did not apply the edit" }],
    },
    "T",
  );
  assert.ok(r);
  assert.equal(
    r.message,
    'Baton: "T": 2 hunks conflict with your edits and stay pending; 1 hunk refused: outside the scope; 1 hunk not applied: the editor did not apply the edit.',
  );
  const refusedOnly = acceptReport({ refused: [{ hunkId: "c", reason: "secret" }] }, "T");
  assert.deepEqual(refusedOnly?.actions, [SHOW_DIFF, INSPECT]);
});

test("where the accepted text is depends on files.autoSave, and is said", () => {
  assert.equal(savedNote("off", []), undefined);
  assert.deepEqual(savedNote("afterDelay", ["app.py"]), { line: "Baton: accepted into app.py; auto save writes it to disk", unsaved: false });
  assert.deepEqual(savedNote("off", ["app.py", "b.py"]), { line: "Baton: accepted into app.py, b.py — not on disk until you save", unsaved: true });
  assert.deepEqual(savedNote(undefined, ["app.py"])?.unsaved, true);
  assert.equal(savedNote("onFocusChange", ["app.py"])?.line, "Baton: accepted into app.py — auto save (onFocusChange) writes it later");
});
