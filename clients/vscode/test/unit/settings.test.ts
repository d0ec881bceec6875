import assert from "node:assert/strict";
import { test } from "node:test";

import { resolveServerLaunch } from "../../src/common/serverLaunch";
import { readSettings, serverSettings } from "../../src/common/settings";

function settingsOf(values: Record<string, unknown>) {
  return readSettings((key) => values[key]);
}

test("settings: defaults, and bad values fall back", () => {
  const s = settingsOf({});
  assert.deepEqual(s.serverPath, []);
  assert.equal(s.worker, null);
  assert.equal(s.progressInterval, 0.5);
  assert.equal(s.notifications, true);
  const bad = settingsOf({ "server.path": "baton", progressInterval: 99, "server.env": { A: "1", B: 2 }, worker: " claude " });
  assert.deepEqual(bad.serverPath, []);
  assert.equal(bad.progressInterval, 0.5);
  assert.deepEqual(bad.serverEnv, { A: "1" });
  assert.equal(bad.worker, "claude");
});

test("the server gets its settings under a baton key", () => {
  const s = settingsOf({ worker: "codex", briefRules: ["Keep the API"] });
  assert.deepEqual(serverSettings(s), {
    baton: { worker: "codex", model: null, isolation: "worktree", briefRules: ["Keep the API"], progressInterval: 0.5, claudeIde: true, permissionPrompts: "inline", acceptReports: "inline" },
  });
});

const none = { isExecutable: () => false, which: () => undefined };

test("server command: the setting wins", () => {
  const c = resolveServerLaunch({ serverPath: ["/v/bin/baton", "lsp"], interpreter: "/py" }, { ...none, isExecutable: (f) => f === "/v/bin/baton" });
  assert.deepEqual(c, { command: "/v/bin/baton", args: ["lsp"], source: "setting baton.server.path" });
  const bare = resolveServerLaunch({ serverPath: ["baton", "lsp"], interpreter: "" }, { ...none, which: (n) => (n === "baton" ? "/u/bin/baton" : undefined) });
  assert.deepEqual(bare, { command: "/u/bin/baton", args: ["lsp"], source: "setting baton.server.path" });
});

test("server command: a setting whose program does not exist is one clear error, not a start", () => {
  const bad = resolveServerLaunch({ serverPath: ["/v/bin/batn", "lsp"], interpreter: "" }, { ...none, managed: "/s/bin/baton" });
  assert.ok("error" in bad);
  assert.equal(bad.kind, "badSetting");
  assert.match(bad.error, /baton\.server\.path runs "\/v\/bin\/batn", which is not an executable file/);
  assert.match(bad.error, /baton-lsp/);
  const notOnPath = resolveServerLaunch({ serverPath: ["batn"], interpreter: "" }, none);
  assert.ok("error" in notOnPath && notOnPath.kind === "badSetting" && /not on PATH/.test(notOnPath.error));
});

test("server command: the server the extension installed, after PATH", () => {
  const managed = { ...none, managed: "/s/server-venv/bin/baton" };
  assert.deepEqual(resolveServerLaunch({ serverPath: [], interpreter: "" }, managed), {
    command: "/s/server-venv/bin/baton",
    args: ["lsp"],
    source: "the server the extension installed",
  });
  // an interpreter of the Python extension without Baton: the installed server rather than python -m
  const ext = resolveServerLaunch({ serverPath: [], interpreter: "" }, { ...managed, pythonExtension: "/e/bin/python" });
  assert.equal((ext as { command: string }).command, "/s/server-venv/bin/baton");
  const onPath = resolveServerLaunch({ serverPath: [], interpreter: "" }, { ...managed, which: () => "/usr/bin/baton" });
  assert.equal((onPath as { command: string }).command, "/usr/bin/baton");
});

test("server command: an interpreter's own baton script, else python -m baton.cli", () => {
  const withScript = { isExecutable: (f: string) => f === "/v/bin/baton", which: () => undefined };
  assert.deepEqual(resolveServerLaunch({ serverPath: [], interpreter: "/v/bin/python" }, withScript), {
    command: "/v/bin/baton",
    args: ["lsp"],
    source: "setting baton.interpreter (its baton script)",
  });
  const c = resolveServerLaunch({ serverPath: [], interpreter: "/v/bin/python" }, none);
  assert.deepEqual(c, { command: "/v/bin/python", args: ["-m", "baton.cli", "lsp"], source: "setting baton.interpreter" });
});

test("server command: the Python extension's interpreter, else baton on PATH, else an error", () => {
  const onPath = { isExecutable: () => false, which: (n: string) => (n === "baton" ? "/usr/bin/baton" : undefined) };
  assert.equal((resolveServerLaunch({ serverPath: [], interpreter: "" }, { ...onPath, pythonExtension: "/e/bin/python" }) as { command: string }).command, "/usr/bin/baton");
  const ext = resolveServerLaunch({ serverPath: [], interpreter: "" }, { isExecutable: (f) => f === "/e/bin/baton", which: () => undefined, pythonExtension: "/e/bin/python" });
  assert.deepEqual(ext, { command: "/e/bin/baton", args: ["lsp"], source: "the Python extension's interpreter (its baton script)" });
  assert.equal((resolveServerLaunch({ serverPath: [], interpreter: "" }, onPath) as { source: string }).source, "baton on PATH");
  const missing = resolveServerLaunch({ serverPath: [], interpreter: "" }, none);
  assert.ok("error" in missing && missing.kind === "missing" && /baton\.server\.path/.test(missing.error));
  // the distribution is baton-lsp (there is no "pip install baton")
  assert.match(missing.error, /pipx install baton-lsp/);
  assert.doesNotMatch(missing.error, /install baton[^-]/);
});
