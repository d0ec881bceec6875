import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { installSource, managedPaths, pipProgress, pythonCandidates, readProbe, recentEnough } from "../../src/common/installPlan";
import { serverSettingsCommand } from "../../src/common/serverSettings";

test("install: the venv lives in the extension's storage", () => {
  assert.deepEqual(managedPaths("/g/baton.baton", "linux"), {
    venv: "/g/baton.baton/server-venv",
    python: "/g/baton.baton/server-venv/bin/python",
    baton: "/g/baton.baton/server-venv/bin/baton",
  });
  assert.match(managedPaths("C:\\g", "win32").baton, /Scripts.baton\.exe$/);
});

test("install: interpreters tried, the Python extension's first", () => {
  assert.deepEqual(pythonCandidates("/e/bin/python", "linux")[0], ["/e/bin/python"]);
  assert.deepEqual(pythonCandidates(undefined, "linux").map((a) => a.join(" ")), ["python3.13", "python3.12", "python3.11", "python3", "python"]);
  assert.deepEqual(pythonCandidates(undefined, "win32")[0], ["py", "-3"]);
});

test("install: Python 3.11 or later, with ensurepip", () => {
  const p = readProbe('{"version": [3, 11, 7], "ensurepip": true}\n');
  assert.deepEqual(p, { version: [3, 11, 7], ensurepip: true });
  assert.ok(recentEnough(p));
  assert.ok(!recentEnough(readProbe('{"version": [3, 10, 12], "ensurepip": true}')!));
  assert.ok(recentEnough(readProbe('{"version": [4, 0, 0], "ensurepip": false}')!));
  assert.equal(readProbe("Python was not found"), undefined);
  assert.equal(readProbe('{"version": "3.11"}'), undefined);
});

test("install: the shipped wheel, else baton-lsp from the index", () => {
  const s = installSource(["README", "baton_lsp-0.1.0-py3-none-any.whl"], "/x/server");
  assert.equal(s.spec, path.join("/x/server", "baton_lsp-0.1.0-py3-none-any.whl"));
  assert.match(s.from, /wheel shipped/);
  assert.deepEqual(installSource([], "/x/server").spec, "baton-lsp");
  assert.equal(installSource(["baton_lsp-0.1.0-py3-none-any.whl", "baton_lsp-0.2.0-py3-none-any.whl"], "/s").spec, path.join("/s", "baton_lsp-0.2.0-py3-none-any.whl"));
});

test("install: pip's output as short progress lines", () => {
  assert.equal(pipProgress("Collecting pygls<3,>=2.1"), "Collecting pygls<3,>=2.1");
  assert.equal(pipProgress("Installing collected packages: a, b"), "Installing collected packages a, b");
  assert.equal(pipProgress("  Using cached x.whl"), undefined);
  assert.ok(pipProgress(`Successfully installed ${"x".repeat(100)}`)!.length < 90);
});

test("settings link: machine settings open on the Remote tab in a remote window", () => {
  assert.equal(serverSettingsCommand(undefined), "workbench.action.openSettings");
  assert.equal(serverSettingsCommand("ssh-remote"), "workbench.action.openRemoteSettings");
});

test("manifest: the .vsix ships the server's wheel and what the marketplace shows", () => {
  const root = path.join(__dirname, "..", "..");
  const manifest = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as Record<string, unknown>;
  const ignore = fs.readFileSync(path.join(root, ".vscodeignore"), "utf8").split("\n");
  assert.ok(ignore.includes("!server/*.whl") && ignore.includes("!CHANGELOG.md"), "the .vsix must ship the wheel and the changelog");
  assert.match(String((manifest.scripts as Record<string, string>).package), /wheel\.mjs/);
  for (const key of ["icon", "repository", "categories", "capabilities", "galleryBanner", "keywords"]) assert.ok(key in manifest, key);
  assert.ok(fs.existsSync(path.join(root, String(manifest.icon))));
  assert.ok(fs.existsSync(path.join(root, "CHANGELOG.md")));
  const c = manifest.contributes as Record<string, unknown>;
  const containers = (c.viewsContainers as { activitybar: { id: string }[] }).activitybar;
  assert.deepEqual(containers.map((x) => x.id), ["baton"]);
  assert.ok((c.views as Record<string, { id: string }[]>).baton!.some((v) => v.id === "baton.tasks"));
  const welcome = c.viewsWelcome as { view: string; contents: string }[];
  assert.ok(welcome.some((w) => w.contents.includes("command:baton.client.installServer")));
  const walk = c.walkthroughs as { steps: { media: { markdown?: string } }[] }[];
  for (const step of walk[0]!.steps) assert.ok(fs.existsSync(path.join(root, step.media.markdown!)), step.media.markdown);
  const commands = new Set((c.commands as { command: string }[]).map((x) => x.command));
  for (const w of welcome) for (const m of w.contents.matchAll(/command:([\w.]+)/g)) assert.ok(commands.has(m[1]!), m[1]);
});
