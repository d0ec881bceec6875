/** The task view's "Hand Off Task…": the workers that can run are offered after "next
 * allowed", and the choice goes to the server's `baton.handoff` (none when dismissed). */

import assert from "node:assert/strict";
import { test } from "node:test";

import type { App } from "../../src/common/commands";
import { NEXT, handOff } from "../../src/common/settledTasks";

const WORKERS = {
  default: "fa",
  workers: [
    { name: "fa", provider: "fake", enabled: true, allowed: true, can_run: true },
    { name: "off", provider: "fake", enabled: false, allowed: true, can_run: true },
    { name: "fb", provider: "fake", enabled: true, allowed: true, can_run: true },
    { name: "elsewhere", provider: "fake", enabled: true, allowed: false, can_run: true },
  ],
};

function server(sent: [string, unknown][]): Pick<App, "server"> {
  const request = (command: string, args?: object): Promise<unknown> => {
    sent.push([command, args]);
    if (command === "baton.workers") return Promise.resolve(WORKERS);
    const worker = (args as { worker?: string }).worker ?? "fb";
    return Promise.resolve({ taskId: "t1", state: "queued", worker, next: ["watch", "cancel"] });
  };
  return { server: { request } } as unknown as Pick<App, "server">;
}

test("hand off offers next-allowed and the workers that can run, and sends the choice", async () => {
  const sent: [string, unknown][] = [];
  let offered: string[] = [];
  const worker = await handOff(server(sent), "t1", (items) => {
    offered = items;
    return Promise.resolve("fb");
  });
  assert.deepEqual(offered, [NEXT, "fa", "fb"]);
  assert.equal(worker, "fb");
  assert.deepEqual(sent[1], ["baton.handoff", { taskId: "t1", worker: "fb" }]);
});

test("next allowed names no worker; a dismissed choice sends nothing", async () => {
  const sent: [string, unknown][] = [];
  assert.equal(await handOff(server(sent), "t1", () => Promise.resolve(NEXT)), "fb");
  assert.deepEqual(sent[1], ["baton.handoff", { taskId: "t1", worker: undefined }]);
  const none: [string, unknown][] = [];
  assert.equal(await handOff(server(none), "t1", () => Promise.resolve(undefined)), undefined);
  assert.deepEqual(none.map(([c]) => c), ["baton.workers"]);
});
