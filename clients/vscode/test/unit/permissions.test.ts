/** ACP permission prompts drawn by the extension: `baton/permission` → notification with the
 * options, "Show details", `baton.answerPermission`; answered/cancelled elsewhere closes it. */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { Permissions, PermissionUi, SHOW_DETAILS, detailsText, promptMessage, waitingText } from "../../src/common/permissions";
import { PermissionRequest, ProtocolError, readPermission } from "../../src/common/protocol";
import { readSettings, serverSettings } from "../../src/common/settings";
import { TaskList } from "../../src/common/tasks";
import { TaskView } from "../../src/common/taskView";
import { task } from "./fixtures";

const OPTIONS = [
  { id: "allow", name: "Allow", kind: "allow_once" },
  { id: "always", name: "Always allow", kind: "allow_always" },
  { id: "reject", name: "Reject", kind: "reject_once" },
];

const DIFF = "--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-def a():\n+X = 1\n";

function request(taskId: string, id: string, status = "pending", extra: Record<string, unknown> = {}): PermissionRequest {
  return readPermission({
    taskId,
    id,
    title: `task ${taskId}`,
    tool: "touch ran.txt",
    kind: "execute",
    preview: "touch ran.txt",
    command: "touch ran.txt",
    files: [],
    options: OPTIONS,
    status,
    ...extra,
  });
}

/** A recording UI: each notification waits until the test clicks one of its buttons. */
class FakeUi implements PermissionUi {
  notes: { message: string; buttons: string[]; click: (b: string | undefined) => void }[] = [];
  details: string[] = [];
  closed: string[] = [];
  changes = 0;
  notify(message: string, buttons: string[]): Thenable<string | undefined> {
    return new Promise((resolve) => this.notes.push({ message, buttons, click: resolve }));
  }
  showDetails(p: PermissionRequest): Thenable<unknown> {
    this.details.push(`${p.taskId}/${p.id}`);
    return Promise.resolve();
  }
  closeDetails(p: PermissionRequest): void {
    this.closed.push(`${p.taskId}/${p.id}`);
  }
  changed(): void {
    this.changes += 1;
  }
}

function setup(): { ui: FakeUi; answers: unknown[]; errors: unknown[]; perms: Permissions } {
  const ui = new FakeUi();
  const answers: unknown[] = [];
  const errors: unknown[] = [];
  const perms = new Permissions(
    ui,
    (args) => {
      answers.push(args);
      return Promise.resolve({ ok: true });
    },
    (err) => errors.push(err),
  );
  return { ui, answers, errors, perms };
}

const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 0));

test("readPermission reads the server's payload and refuses a bad one", () => {
  const p = readPermission({
    taskId: "t1",
    id: "p1",
    title: "Edit it",
    tool: "Edit app.py",
    kind: "edit",
    preview: DIFF,
    command: null,
    files: ["app.py", 3],
    options: [...OPTIONS, { name: "no id" }, "junk"],
    status: "pending",
  });
  assert.equal(p.preview, DIFF);
  assert.deepEqual(p.files, ["app.py"]);
  assert.deepEqual(p.options.map((o) => o.id), ["allow", "always", "reject"]);
  assert.equal(p.answer, null);
  assert.throws(() => readPermission({ id: "p1", status: "pending" }), ProtocolError);
  assert.throws(() => readPermission([]), ProtocolError);
});

test("the extension asks the server for inline prompts (no showMessageRequest)", () => {
  const baton = serverSettings(readSettings(() => undefined)).baton as Record<string, unknown>;
  assert.equal(baton.permissionPrompts, "inline");
});

test("a pending request shows its preview with the options; a click answers with the option and permission id", async () => {
  const { ui, answers, perms } = setup();
  perms.update(request("t1", "p1"));
  assert.equal(ui.notes.length, 1);
  assert.equal(ui.notes[0]!.message, "Baton: task t1 asks permission: touch ran.txt");
  assert.deepEqual(ui.notes[0]!.buttons, ["Allow", "Always allow", "Reject", SHOW_DETAILS]);
  assert.equal(perms.list("t1").length, 1);
  ui.notes[0]!.click("Always allow");
  await tick();
  assert.deepEqual(answers, [{ taskId: "t1", option: "always", permissionId: "p1" }]);
  assert.deepEqual(perms.list(), []);
  assert.deepEqual(ui.closed, ["t1/p1"]);
  // the server's own "answered" notification afterwards changes nothing more
  perms.update(request("t1", "p1", "answered", { answer: "always", by: "user" }));
  assert.equal(ui.notes.length, 1);
  assert.deepEqual(answers.length, 1);
});

test("the same pending notification twice shows one prompt", () => {
  const { ui, perms } = setup();
  perms.update(request("t1", "p1"));
  perms.update(request("t1", "p1"));
  assert.equal(ui.notes.length, 1);
  assert.equal(perms.list().length, 1);
});

test("Show details opens the diff read-only, then the prompt comes back", async () => {
  const { ui, answers, perms } = setup();
  const p = request("t1", "p1", "pending", { kind: "edit", tool: "Edit app.py", preview: DIFF, files: ["app.py"] });
  perms.update(p);
  assert.match(ui.notes[0]!.message, /asks permission: Edit app.py: --- a\/app.py …$/);
  const text = detailsText(p);
  assert.ok(text.includes("+X = 1\n") && text.includes("-def a():\n"), text);
  assert.match(text, /files: app.py/);
  assert.match(text, /options: Allow \| Always allow \| Reject/);
  ui.notes[0]!.click(SHOW_DETAILS);
  await tick();
  assert.deepEqual(ui.details, ["t1/p1"]);
  assert.equal(ui.notes.length, 2, "asked again after the details");
  ui.notes[1]!.click("Reject");
  await tick();
  assert.deepEqual(answers, [{ taskId: "t1", option: "reject", permissionId: "p1" }]);
});

test("several pending at once, one task cancelled meanwhile: each answer goes to its own request", async () => {
  const { ui, answers, perms } = setup();
  perms.update(request("t1", "p1"));
  perms.update(request("t2", "p1")); // the same permission id in another task
  perms.update(request("t1", "p2"));
  assert.equal(ui.notes.length, 3);
  assert.deepEqual(perms.list().map((p) => `${p.taskId}/${p.id}`), ["t1/p1", "t2/p1", "t1/p2"]);
  // t2 is cancelled: its request goes, and a late click on its notification answers nothing
  perms.update(request("t2", "p1", "cancelled"));
  assert.deepEqual(ui.closed, ["t2/p1"]);
  ui.notes[1]!.click("Allow");
  await tick();
  assert.deepEqual(answers, []);
  // t1/p1 answered from the CLI: its notification's button does nothing either
  perms.update(request("t1", "p1", "answered", { answer: "allow", by: "cli" }));
  ui.notes[0]!.click("Reject");
  await tick();
  assert.deepEqual(answers, []);
  // the one still pending is answered with its own ids
  ui.notes[2]!.click("Allow");
  await tick();
  assert.deepEqual(answers, [{ taskId: "t1", option: "allow", permissionId: "p2" }]);
  assert.deepEqual(perms.list(), []);
});

test("a dismissed prompt stays pending; a failed answer keeps it and reports", async () => {
  const ui = new FakeUi();
  const errors: unknown[] = [];
  const perms = new Permissions(ui, () => Promise.reject(new Error("no permission request is waiting")), (e) => errors.push(e));
  perms.update(request("t1", "p1"));
  ui.notes[0]!.click(undefined);
  await tick();
  assert.equal(perms.list().length, 1);
  await perms.choose("t1", "p1", "allow");
  assert.equal(errors.length, 1);
  assert.equal(perms.list().length, 1);
  perms.clear();
  assert.deepEqual(perms.list(), []);
  assert.deepEqual(ui.closed, ["t1/p1"]);
});

test("the task view says the task waits for a permission", () => {
  const { perms } = setup();
  perms.update(request("t1", "p1"));
  const list = new TaskList();
  list.reset([task("t1", "needs_input"), task("t2", "running")]);
  const view = new TaskView(list, (id) => {
    const p = perms.list(id)[0];
    return p === undefined ? undefined : waitingText(p);
  });
  assert.equal(view.getTreeItem({ task: list.get("t1")! }).description, "needs input — fake — waits for permission: touch ran.txt");
  assert.equal(view.getTreeItem({ task: list.get("t2")! }).description, "running — fake");
  view.dispose();
});

test("a long preview is cut in the notification, whole in the details", () => {
  const p = request("t1", "p1", "pending", { preview: "x".repeat(1000) });
  assert.ok(promptMessage(p).length < 400);
  assert.ok(detailsText(p).includes("x".repeat(1000)));
});

test("the manifest contributes the Answer Permission Request command", () => {
  const manifest = JSON.parse(readFileSync(join(__dirname, "..", "..", "package.json"), "utf8")) as {
    contributes: { commands: { command: string }[] };
  };
  assert.ok(manifest.contributes.commands.some((c) => c.command === "baton.client.answerPermission"));
});
