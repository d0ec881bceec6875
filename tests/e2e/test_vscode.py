"""The VS Code client end to end in real VS Code: code-server (under Node 24) in headless
Debian Chromium, driven by playwright-core, with the built .vsix installed and the real
``baton lsp`` running the fake agent in a temporary git repository.

The user opens app.py, selects its lines, runs "Baton: Delegate Selection…" and types an
instruction; the status bar counts the running task; the draft and then the final diff are
drawn inline with CodeLenses; one hunk is accepted (the text changes, Ctrl+Z undoes it and
the hunk is pending again, Ctrl+Shift+Z accepts it again), then both with Accept all, undone
and redone the same way; the status bar goes back to idle. Screenshots of every step are saved under
artifacts/vscode/. The clicking and checking is clients/vscode/test/e2e/drive.mjs.

The harness (code-server, the drivers, what they return) is
tests/e2e/vscode_support/workbench.py; set-up: scripts/install-vscode-test installs and caches
Chromium, Node 24, code-server and the extension's npm packages. If it cannot, this test FAILS
saying what is missing: it never passes or skips silently.
"""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from baton.process.sandbox import status
from tests.conftest import user_config
from tests.e2e.vscode_support.keybindings import builtin_keys, encode, shadowing
from tests.e2e.vscode_support.workbench import (
    APP,
    BASE_SETTINGS,
    BATON,
    EXTENSION,
    ROOT,
    SERVER,
    Tools,
    VSCode,
)

pytestmark = pytest.mark.slow

ARTIFACTS = ROOT / "artifacts" / "vscode"
INSTRUCTION = "Make both functions return ten times more"
SCRIPT = {
    "steps": [
        {"say": "looking at app.py"},
        {"sleep": 1.0},
        {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
        {"sleep": 3.0},
        {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
        {"usage": {"input": 120, "output": 30}},
    ],
    "summary": "Both functions return ten times more.",
}


def test_delegate_review_accept_undo_redo(vscode: VSCode) -> None:
    settings = vscode.settings(SCRIPT)
    run = vscode.run("drive.mjs", ARTIFACTS, 180, settings, instruction=INSTRUCTION)
    by = run.by
    # What the page showed at each step.
    assert "idle" in by["workbench-idle"]["status"]
    assert "Delegate app.py:1-6" in by["instruction-typed"]["title"]
    assert "1 running" in by["task-running"]["status"]
    assert re.fullmatch(
        r'Baton: started ".+" \(task [0-9a-z]+\)( with [\w.-]+)?\.',
        by["task-running"]["started"],
    ), by["task-running"]["started"]
    draft = by["draft-shown"]
    assert any("working" in lens for lens in draft["lenses"]) and "→ return 10" in draft["ghosts"]
    review = by["ready-for-review"]
    assert "1 ready for review" in review["status"]
    assert review["lenses"].count("Accept") == 2 and review["lenses"].count("Reject") == 2
    assert any(lens.startswith("Baton ▸") and "Accept all (2)" in lens for lens in review["lenses"])
    assert "Open diff" in review["lenses"]
    assert not any("working" in lens for lens in review["lenses"]), review["lenses"]
    assert review["focusInEditor"], "a Baton notification or view took the focus"
    opened = by["diff-opened"]
    assert "return 10" in opened["proposal"] and "return 20" in opened["proposal"]
    assert "app.py ↔ Baton:" in opened["tab"]
    assert "    return 10" in by["hunk-accepted"]["text"]
    assert by["hunk-accepted"]["ghosts"] == ["→ return 20"]
    assert by["hunk-accepted"]["lenses"].count("Accept") == 1
    # code-server's files.autoSave is afterDelay: the status bar says auto save writes it.
    assert (
        "Baton: accepted into app.py; auto save writes it to disk" in by["hunk-accepted"]["saved"]
    )
    # Ctrl+Z after an accept is a decision (issue 17): the hunk is pending and drawn again.
    undone = by["accept-undone"]
    assert undone["focusInEditor"] and undone["ghosts"] == ["→ return 10", "→ return 20"]
    assert "return 10" not in undone["text"] and undone["lenses"].count("Accept") == 2
    assert "1 ready for review" in undone["status"]
    redone = by["accept-redone"]  # Ctrl+Shift+Z: accepted again
    assert "    return 10" in redone["text"] and redone["ghosts"] == ["→ return 20"]
    assert redone["lenses"].count("Accept") == 1
    # Accept all, then undo it: the applied task is in review again; redo applies it again.
    assert "idle" in by["all-accepted"]["status"] and by["all-accepted"]["lenses"] == []
    all_undone = by["all-undone"]
    assert "1 ready for review" in all_undone["status"]
    assert all_undone["ghosts"] == ["→ return 10", "→ return 20"]
    assert "return 10" not in all_undone["text"] and "return 20" not in all_undone["text"]
    assert by["all-redone"]["ghosts"] == [] and by["all-redone"]["lenses"] == []
    idle = by["status-idle"]
    assert "    return 20" in idle["text"] and idle["lenses"] == [] and idle["ghosts"] == []
    # Screenshots of every step.
    run.assert_screenshots(17)
    # The broker's record: one task, both hunks accepted (after the undos and redos), so it
    # is applied; every accept went through the editor, never to disk by Baton: the file holds
    # its old text, or the editor's once code-server's auto save (afterDelay) has written it.
    tasks = vscode.tasks()
    assert [t["state"] for t in tasks] == ["applied"], tasks
    on_disk = (vscode.repo / "app.py").read_text()
    accepted = on_disk != APP
    assert not accepted or ("    return 10" in on_disk and "    return 20" in on_disk), on_disk


INSTALL_ARTIFACTS = ROOT / "artifacts" / "vscode-install"


def _path_without_baton(path: str) -> str:
    """``path`` without the folders that hold a ``baton`` program (this checkout's venv...)."""
    keep = [d for d in path.split(os.pathsep) if d and shutil.which("baton", path=d) is None]
    return os.pathsep.join(keep)


# It makes a venv and pip-installs the wheel: minutes on a loaded 2-core machine, not seconds.
@pytest.mark.timeout(900)
def test_fresh_profile_installs_the_server_and_delegates(vscode: VSCode) -> None:
    """A newcomer's VS Code: a fresh profile with no ``baton.server.*`` setting and no
    ``baton`` on PATH. The extension offers to install the server; the user accepts; it makes
    a venv in the extension's global storage with the wheel shipped in the .vsix, starts it,
    and a delegation goes through to review and is accepted. "Open Server Settings" lands on
    the tab where the machine-scoped ``baton.server.path`` is listed."""
    script = vscode.fake_script(SCRIPT)
    # Node 24 first (code-server needs it), then the user's PATH less any folder with a baton.
    path = _path_without_baton(
        f"{vscode.tools.node24.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    )
    assert shutil.which("baton", path=path) is None
    assert any(shutil.which(p, path=path) for p in ("python3.11", "python3.12", "python3.13"))
    # The worker is chosen explicitly (the fake agent, scripted): only the server is missing.
    settings = {**BASE_SETTINGS, "baton.worker": "fake"}
    env = {"BATON_HOME": str(vscode.home), "BATON_FAKE_SCRIPT": str(script), "PATH": path}
    run = vscode.run(
        "install.mjs", INSTALL_ARTIFACTS, 600, settings, env=env, instruction=INSTRUCTION
    )
    storage = run.workbench.user_data / "User" / "globalStorage" / "baton.baton" / "server-venv"
    managed = storage / "bin" / "baton"
    assert managed.is_file(), sorted(p.name for p in storage.parent.rglob("*"))[:50]
    # what it came from, so an updated extension with a newer wheel installs that one
    wheel = next((EXTENSION / "server").glob("baton_lsp-*.whl")).name
    assert (storage / "baton-installed-from").read_text().strip() == wheel
    site = list(storage.glob("lib/python3*/site-packages/baton_lsp-*.dist-info"))
    assert site, "baton-lsp is not installed in the extension's venv"
    by, log = run.by, run.log
    offer = by["install-offered"]
    assert "no Baton language server found" in offer["toast"]
    assert "pipx install baton-lsp" in offer["toast"] and "Install Server" in offer["buttons"]
    assert "Install Server" in by["welcome-view"]["buttons"], by["welcome-view"]
    assert "installing the server" in by["installing"]["progress"]
    assert "from the wheel shipped with the extension" in by["installing"]["progress"]
    assert "idle" in by["server-started"]["status"]
    assert "1 ready for review" in by["ready-for-review"]["status"]
    assert "return 10" in by["all-accepted"]["text"] and "return 20" in by["all-accepted"]["text"]
    # machine-scoped settings: code-server lists them on its Remote tab, which is where it opens
    assert by["server-settings"]["found"], by["server-settings"]
    assert by["server-settings"]["tab"].startswith("Remote"), by["server-settings"]
    assert "wheel shipped with the extension" in log, log[-3000:]
    assert f"starting {managed} lsp (the server the extension installed)" in log, log[-3000:]
    run.assert_screenshots(at_least=7)


def test_keybindings_do_not_shadow_built_ins(tools: Tools) -> None:
    """None of the extension's keys is one VS Code itself binds (e.g. Ctrl+Alt+B, Toggle
    Secondary Side Bar), read from the bundled workbench of this code-server."""
    bundle = tools.code_server.resolve().parents[2] / "lib" / "vscode" / "out"
    workbench_js = bundle / "vs" / "code" / "browser" / "workbench" / "workbench.js"
    assert workbench_js.is_file(), workbench_js
    builtins = builtin_keys(workbench_js)
    assert encode("ctrl+alt+b", mac=False) in builtins  # the scan finds what it must
    manifest = json.loads((EXTENSION / "package.json").read_text())
    assert shadowing(manifest, builtins) == []


BADPATH_ARTIFACTS = ROOT / "artifacts" / "vscode-bad-path"


def test_bad_server_path_fails_once_without_restarts(vscode: VSCode) -> None:
    """``baton.server.path`` entered item by item: a bare ``baton`` (no ``lsp``), then a path
    that does not exist, then the right command. The extension starts each wrong value once
    (the missing path not at all), shows one error message for the whole run, and starts the
    server once the value is right."""
    baton = BATON
    settings = {**BASE_SETTINGS, "baton.server.path": [str(baton)]}
    run = vscode.run(
        "badpath.mjs",
        BADPATH_ARTIFACTS,
        240,
        settings,
        BATON_E2E_MACHINE_SETTINGS=str(vscode.machine_settings),
        BATON_E2E_BATON=str(baton),
    )
    by, log = run.by, run.log
    first = by["bare-baton-failed"]["toasts"]
    assert len(first) == 1, first
    assert "did not start the language server: it exited before answering" in first[0], first
    assert "It should run `baton lsp`" in first[0], first
    assert "baton-lsp" in first[0]
    # the missing path is reported (log, status bar), with no second toast
    assert by["missing-path-failed"]["toasts"] == first
    assert "not running" in by["missing-path-failed"]["status"]
    assert 'baton.server.path runs "/nowhere/bin/baton", which is not an executable file' in log
    assert "idle" in by["right-path-started"]["status"]
    assert by["right-path-started"]["toasts"] == first
    # one start of the bare baton (no restart storm), none of the missing path, one of the right
    starts = [line for line in log.splitlines() if "starting " in line and "(setting" in line]
    assert [s.split("starting ", 1)[1] for s in starts] == [
        f"{baton} (setting baton.server.path)",
        f"{baton} lsp (setting baton.server.path)",
    ], starts


SANDBOX_ARTIFACTS = ROOT / "artifacts" / "vscode-unsandboxed"


@pytest.mark.skipif(not status().works, reason=f"no sandbox can run here: {status().why}")
def test_status_bar_says_agents_run_unsandboxed(vscode: VSCode) -> None:
    """``sandbox = "off"`` in the user's config: the status bar item reads "Baton:
    unsandboxed" with a warning icon and background, its tooltip says why and how to fix
    it; rewriting the config (here, as the user would) turns it back to idle."""
    config = user_config(vscode.tmp, 'sandbox = "off"\n')
    (vscode.tmp / "fixed").mkdir()
    fixed = user_config(vscode.tmp / "fixed")  # the same, without the setting
    settings = {**BASE_SETTINGS, "baton.server.path": SERVER}
    run = vscode.run(
        "sandbox.mjs",
        SANDBOX_ARTIFACTS,
        180,
        settings,
        BATON_E2E_USER_CONFIG=str(config),
        BATON_E2E_FIXED_CONFIG=fixed.read_text(),
    )
    by = run.by
    warned = by["unsandboxed"]
    assert warned["text"].strip() == "Baton: unsandboxed", warned
    assert warned["icon"] and warned["warned"], warned
    assert 'agents run UNSANDBOXED, with all you can reach (sandbox = "off"' in warned["status"]
    assert 'Remove sandbox = "off" from your user config' in warned["status"]
    fixed_step = by["fixed"]
    assert "idle" in fixed_step["status"] and not fixed_step["icon"], fixed_step
    assert "unsandboxed" not in fixed_step["text"]
