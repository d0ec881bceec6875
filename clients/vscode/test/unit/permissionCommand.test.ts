import assert from "node:assert/strict";
import { test } from "node:test";

import { NOTHING_WAITING, PermissionChooser, answerPermissionCommand } from "../../src/common/permissionCommand";
import { Permissions, PermissionUi, SHOW_DETAILS } from "../../src/common/permissions";
import { PermissionRequest, readPermission } from "../../src/common/protocol";

const OPTIONS = [
  { id: "allow", name: "Allow", kind: "allow_once" },
  { id: "reject", name: "Reject", kind: "reject_once" },
];

function request(taskId: string, id: string, tool = "touch ran.txt"): PermissionRequest {
  return readPermission({
    taskId,
    id,
    title: `task ${taskId}`,
    tool,
    kind: "execute",
    preview: tool,
    command: tool,
    files: [],
    options: OPTIONS,
    status: "pending",
  });
}

/** Notifications stay unanswered: the command is what answers. */
const silent: PermissionUi = {
  notify: () => new Promise(() => undefined),
  showDetails: () => Promise.resolve(),
  closeDetails: () => undefined,
  changed: () => undefined,
};

/** A chooser that picks by label, from a script, and records what it was offered. */
class Chooser implements PermissionChooser {
  informed: string[] = [];
  offered: { labels: string[]; placeHolder: string }[] = [];
  details: string[] = [];
  constructor(private readonly picks: (string | undefined)[]) {}
  inform(message: string): void {
    this.informed.push(message);
  }
  pick<T extends { label: string }>(items: T[], placeHolder: string): Thenable<T | undefined> {
    this.offered.push({ labels: items.map((i) => i.label), placeHolder });
    const label = this.picks.shift();
    return Promise.resolve(items.find((i) => i.label === label));
  }
  showDetails(p: PermissionRequest): Thenable<unknown> {
    this.details.push(`${p.taskId}/${p.id}`);
    return Promise.resolve();
  }
}

function setup(): { perms: Permissions; answers: unknown[] } {
  const answers: unknown[] = [];
  const perms = new Permissions(silent, (args) => {
    answers.push(args);
    return Promise.resolve({});
  });
  return { perms, answers };
}

test("nothing waiting says so and asks nothing", async () => {
  const { perms, answers } = setup();
  const ui = new Chooser([]);
  await answerPermissionCommand(perms, ui)();
  assert.deepEqual(ui.informed, [NOTHING_WAITING]);
  assert.deepEqual(ui.offered, []);
  assert.deepEqual(answers, []);
});

test("one request goes straight to its options; the choice answers it", async () => {
  const { perms, answers } = setup();
  perms.update(request("t1", "p1"));
  const ui = new Chooser(["Allow"]);
  await answerPermissionCommand(perms, ui)({ taskId: "t1" });
  assert.deepEqual(ui.offered, [{ labels: ["Allow", "Reject", SHOW_DETAILS], placeHolder: "task t1 asks permission: touch ran.txt" }]);
  assert.deepEqual(answers, [{ taskId: "t1", option: "allow", permissionId: "p1" }]);
});

test("several requests: a pick chooses which; Show details opens it; dismissing does nothing", async () => {
  const { perms, answers } = setup();
  perms.update(request("t1", "p1", "rm a"));
  perms.update(request("t2", "p2", "rm b"));
  const ui = new Chooser(["rm b", SHOW_DETAILS, "rm a", undefined, undefined]);
  const run = answerPermissionCommand(perms, ui);
  await run();
  assert.deepEqual(ui.offered[0], { labels: ["rm a", "rm b"], placeHolder: "Which permission request?" });
  assert.deepEqual(ui.details, ["t2/p2"]);
  await run(); // picks rm a, then dismisses its options
  await run(); // dismisses the first pick
  assert.deepEqual(answers, []);
  // a task's id narrows the requests to that task's
  const only = new Chooser(["Reject"]);
  await answerPermissionCommand(perms, only)({ taskId: "t2" });
  assert.deepEqual(only.offered[0]!.placeHolder, "task t2 asks permission: rm b");
  assert.deepEqual(answers, [{ taskId: "t2", option: "reject", permissionId: "p2" }]);
});
