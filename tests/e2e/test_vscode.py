"""The VS Code client end to end in real VS Code: code-server (under Node 24) in headless
Debian Chromium, driven by playwright-core, with the built .vsix installed and the real
``baton lsp`` running the fake agent in a temporary git repository.

The user opens app.py, selects its lines, runs "Baton: Delegate Selection…" and types an
instruction; the status bar counts the running task; the draft and then the final diff are
drawn inline with CodeLenses; one hunk is accepted (the text changes, Ctrl+Z undoes it and
the hunk is pending again, Ctrl+Shift+Z accepts it again), then both with Accept all, undone
and redone the same way; the status bar goes back to idle. Screenshots of every step are saved under
artifacts/vscode/. The clicking and checking is clients/vscode/test/e2e/drive.mjs.

Set-up: scripts/install-vscode-test installs and caches Chromium, Node 24, code-server and
the extension's npm packages. If it cannot, this test FAILS saying what is missing: it never
passes or skips silently.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from baton.process.sandbox import status
from tests.conftest import user_config
from tests.e2e.vscode_support.keybindings import builtin_keys, encode, shadowing

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "clients" / "vscode"
ARTIFACTS = ROOT / "artifacts" / "vscode"
INSTRUCTION = "Make both functions return ten times more"
APP = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
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


@dataclass(frozen=True)
class Tools:
    node24: Path
    code_server: Path
    chromium: Path


def _loud(message: str) -> None:
    print(f"\n*** VS Code e2e cannot run: {message} ***\n", file=sys.stderr)
    pytest.fail(f"VS Code e2e cannot run: {message}", pytrace=False)


@pytest.fixture(scope="module")
def tools() -> Tools:
    """Install (or find cached) everything; fail loudly when something cannot be installed."""
    return _installed()


@pytest.fixture(scope="module")
def vsix(tools: Tools) -> Path:
    """The extension built and packaged by its own build (`npm run package`: esbuild + vsce)."""
    return _packaged(tools)


# Once per session, not per module: the seven VS Code modules import these two fixtures, and
# a module-scoped fixture imported into another module runs again there (`npm run package`
# builds a wheel too: seconds each time). A failure is not cached: the next module tries again.
@functools.cache
def _installed() -> Tools:
    start = time.monotonic()
    proc = subprocess.run(
        [str(ROOT / "scripts" / "install-vscode-test")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if proc.returncode != 0:
        _loud(f"scripts/install-vscode-test failed:\n{proc.stderr[-3000:]}")
    found = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    out = Tools(Path(found["NODE24"]), Path(found["CODE_SERVER"]), Path(found["CHROMIUM"]))
    for name, path in vars(out).items():
        if not path.exists():
            _loud(f"{name} is missing at {path} after scripts/install-vscode-test")
    print(f"install-vscode-test: {time.monotonic() - start:.1f} s", file=sys.stderr)
    return out


def _env(tools: Tools, extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{tools.node24.parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


@functools.cache
def _packaged(tools: Tools) -> Path:
    proc = subprocess.run(
        ["npm", "run", "package"],
        cwd=EXTENSION,
        capture_output=True,
        text=True,
        env=_env(tools, {}),
        timeout=300,
    )
    assert proc.returncode == 0, (
        f"npm run package failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    )
    out = EXTENSION / "dist" / "baton.vsix"
    assert out.is_file()
    return out


def _listening_port(timeout: float, proc: subprocess.Popen[bytes], log: Path) -> int:
    """The port code-server bound (it was given port 0), read from its log's first lines:
    a port chosen by the test and bound later by code-server could be taken in between."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(r"HTTP server listening on http://127\.0\.0\.1:(\d+)/", log.read_text())
        if found:
            return int(found.group(1))
        if proc.poll() is not None:
            raise AssertionError(
                f"code-server exited ({proc.returncode}):\n{log.read_text()[-3000:]}"
            )
        time.sleep(0.1)
    raise AssertionError(f"code-server never said where it listens:\n{log.read_text()[-3000:]}")


def _wait_http(url: str, timeout: float, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(
                f"code-server exited ({proc.returncode}):\n{log.read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"code-server not ready at {url}:\n{log.read_text()[-3000:]}")


@dataclass
class Workbench:
    url: str
    repo: Path
    home: Path
    tmp: Path
    env: dict[str, str]
    user_data: Path


BASE_SETTINGS = {
    "workbench.startupEditor": "none",
    "chat.disableAIFeatures": True,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "workbench.tips.enabled": False,
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "security.workspace.trust.enabled": False,
    "git.enabled": False,
    "editor.codeLens": True,
    "window.restoreWindows": "none",
}


@contextmanager
def code_server(
    tools: Tools,
    vsix: Path,
    repo: Path,
    tmp_path: Path,
    settings: dict[str, object],
    env_extra: dict[str, str],
    artifacts: Path,
    host: str = "127.0.0.1",
) -> Iterator[Workbench]:
    """code-server on a loopback port of its choosing with the .vsix installed, opened on
    ``repo``, with ``settings`` as the user's (their ``baton.server.*`` also as the
    machine's); the browser opens it at ``host`` (``localhost``: another site than the
    broker's ``127.0.0.1``)."""
    user_data, extensions = tmp_path / "ud", tmp_path / "ext"
    (user_data / "User").mkdir(parents=True)
    (user_data / "User" / "settings.json").write_text(json.dumps(settings, indent=2))
    # Paths are machine settings: code-server reads those from the server machine's file.
    (user_data / "Machine").mkdir()
    machine = {k: v for k, v in settings.items() if k.startswith("baton.server")}
    (user_data / "Machine" / "settings.json").write_text(json.dumps(machine, indent=2))
    config = tmp_path / "code-server.yaml"
    config.write_text("auth: none\ncert: false\n")
    xdg = {
        k: str(tmp_path / "xdg" / k.lower())
        for k in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")
    }
    env = _env(tools, {**xdg, **env_extra})
    common = [
        str(tools.code_server),
        "--config", str(config),
        "--user-data-dir", str(user_data),
        "--extensions-dir", str(extensions),
    ]  # fmt: skip
    installed = subprocess.run(
        [*common, "--install-extension", str(vsix)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert any(p.name.startswith("baton.baton-") for p in extensions.iterdir()), installed.stdout
    serve = ["--bind-addr", "127.0.0.1:0", "--auth", "none", "--disable-telemetry"]
    serve += ["--disable-update-check", "--disable-workspace-trust"]
    serve += ["--disable-getting-started-override"]
    log = tmp_path / "code-server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*common, *serve, str(repo)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        port = _listening_port(30, proc, log)
        _wait_http(f"http://127.0.0.1:{port}/healthz", 30, proc, log)
        yield Workbench(
            f"http://{host}:{port}/?folder={repo}",
            repo,
            Path(env_extra.get("BATON_HOME", "")),
            tmp_path,
            env,
            user_data,
        )
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        if artifacts.is_dir():  # the logs beside the screenshots, for a failure's post-mortem
            shutil.copy(log, artifacts / "code-server.log")
            for f in (user_data / "logs").rglob("*.log"):
                if "Baton" in f.name or f.name in ("exthost.log", "remoteexthost.log"):
                    shutil.copy(f, artifacts / f.name.replace(" ", "-"))


@pytest.fixture
def workbench(
    tools: Tools, vsix: Path, repo: Path, baton_home: Path, tmp_path: Path
) -> Iterator[Workbench]:
    """code-server with the .vsix installed and baton.server.path set to this checkout's."""
    assert (repo / "app.py").read_text() == APP
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    settings = {
        **BASE_SETTINGS,
        "baton.server.path": [str(ROOT / ".venv" / "bin" / "baton"), "lsp"],
        # Through the setting (not only inherited) so the setting is what is tested.
        "baton.server.env": {"BATON_HOME": str(baton_home), "BATON_FAKE_SCRIPT": str(script)},
    }
    with code_server(
        tools, vsix, repo, tmp_path, settings, {"BATON_HOME": str(baton_home)}, ARTIFACTS
    ) as wb:
        yield wb


def drive(
    script: str, workbench: Workbench, tools: Tools, artifacts: Path, timeout: float, **env: str
) -> list[dict[str, Any]]:
    """Run the driver ``script`` (under clients/vscode/test/e2e) against ``workbench``; its
    steps (one JSON object each) are returned and saved as ``steps.json``."""
    run_env = {
        **workbench.env,
        "BATON_E2E_URL": workbench.url,
        "BATON_E2E_ARTIFACTS": str(artifacts),
        "BATON_E2E_PROFILE": str(workbench.tmp / "chromium"),
        "BATON_E2E_CHROMIUM": str(tools.chromium),
        **env,
    }
    started = time.monotonic()
    proc = subprocess.run(
        [str(tools.node24), str(EXTENSION / "test" / "e2e" / script)],
        capture_output=True,
        text=True,
        env=run_env,
        timeout=timeout,
    )
    steps = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    (artifacts / "steps.json").write_text(json.dumps(steps, indent=2))
    print(f"{script}: {time.monotonic() - started:.1f} s", file=sys.stderr)
    for s in steps:
        print(f"  {s['t']:6.1f} s  {s['step']}", file=sys.stderr)
    assert proc.returncode == 0, (
        f"{proc.stderr[-4000:]}\nsteps: {json.dumps(steps, indent=1)[-4000:]}"
    )
    return steps


def test_delegate_review_accept_undo_redo(workbench: Workbench, tools: Tools) -> None:
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    steps = drive(
        "drive.mjs",
        workbench,
        tools,
        ARTIFACTS,
        180,
        BATON_E2E_INSTRUCTION=INSTRUCTION,
        BATON_E2E_FILE="app.py",
    )
    by = {s["step"]: s for s in steps}
    assert "done" in by
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
    shots = sorted(p.name for p in ARTIFACTS.glob("*.png"))
    assert len(shots) == 17 and not any("FAILED" in s for s in shots), shots
    # The broker's record: one task, both hunks accepted (after the undos and redos), so it
    # is applied; every accept went through the editor, never to disk by Baton: the file holds
    # its old text, or the editor's once code-server's auto save (afterDelay) has written it.
    listed = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "baton"), "tasks", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "BATON_HOME": str(workbench.home)},
        cwd=workbench.repo,
        timeout=30,
    )
    assert listed.returncode == 0, listed.stderr
    tasks = json.loads(listed.stdout)
    tasks = tasks["tasks"] if isinstance(tasks, dict) else tasks
    assert [t["state"] for t in tasks] == ["applied"], tasks
    on_disk = (workbench.repo / "app.py").read_text()
    accepted = on_disk != APP
    assert not accepted or ("    return 10" in on_disk and "    return 20" in on_disk), on_disk


INSTALL_ARTIFACTS = ROOT / "artifacts" / "vscode-install"


def _path_without_baton(path: str) -> str:
    """``path`` without the folders that hold a ``baton`` program (this checkout's venv...)."""
    keep = [d for d in path.split(os.pathsep) if d and shutil.which("baton", path=d) is None]
    return os.pathsep.join(keep)


# It makes a venv and pip-installs the wheel: minutes on a loaded 2-core machine, not seconds.
@pytest.mark.timeout(900)
def test_fresh_profile_installs_the_server_and_delegates(
    tools: Tools, vsix: Path, repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    """A newcomer's VS Code: a fresh profile with no ``baton.server.*`` setting and no
    ``baton`` on PATH. The extension offers to install the server; the user accepts; it makes
    a venv in the extension's global storage with the wheel shipped in the .vsix, starts it,
    and a delegation goes through to review and is accepted. "Open Server Settings" lands on
    the tab where the machine-scoped ``baton.server.path`` is listed."""
    shutil.rmtree(INSTALL_ARTIFACTS, ignore_errors=True)
    INSTALL_ARTIFACTS.mkdir(parents=True)
    assert (repo / "app.py").read_text() == APP
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    # Node 24 first (code-server needs it), then the user's PATH less any folder with a baton.
    path = _path_without_baton(f"{tools.node24.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    assert shutil.which("baton", path=path) is None
    assert any(shutil.which(p, path=path) for p in ("python3.11", "python3.12", "python3.13"))
    # The worker is chosen explicitly (the fake agent, scripted): only the server is missing.
    settings = {**BASE_SETTINGS, "baton.worker": "fake"}
    env = {"BATON_HOME": str(baton_home), "BATON_FAKE_SCRIPT": str(script), "PATH": path}
    with code_server(tools, vsix, repo, tmp_path, settings, env, INSTALL_ARTIFACTS) as wb:
        steps = drive(
            "install.mjs",
            wb,
            tools,
            INSTALL_ARTIFACTS,
            600,
            BATON_E2E_INSTRUCTION=INSTRUCTION,
            BATON_E2E_FILE="app.py",
        )
        storage = wb.user_data / "User" / "globalStorage" / "baton.baton" / "server-venv"
        managed = storage / "bin" / "baton"
        assert managed.is_file(), sorted(p.name for p in storage.parent.rglob("*"))[:50]
        # what it came from, so an updated extension with a newer wheel installs that one
        wheel = next((EXTENSION / "server").glob("baton_lsp-*.whl")).name
        assert (storage / "baton-installed-from").read_text().strip() == wheel
        site = list(storage.glob("lib/python3*/site-packages/baton_lsp-*.dist-info"))
        assert site, "baton-lsp is not installed in the extension's venv"
        log = "\n".join(
            f.read_text(errors="replace") for f in (wb.user_data / "logs").rglob("*Baton*.log")
        )
    by = {s["step"]: s for s in steps}
    assert "done" in by
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
    shots = sorted(p.name for p in INSTALL_ARTIFACTS.glob("*.png"))
    assert len(shots) >= 7 and not any("FAILED" in s for s in shots), shots


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


def test_bad_server_path_fails_once_without_restarts(
    tools: Tools, vsix: Path, repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    """``baton.server.path`` entered item by item: a bare ``baton`` (no ``lsp``), then a path
    that does not exist, then the right command. The extension starts each wrong value once
    (the missing path not at all), shows one error message for the whole run, and starts the
    server once the value is right."""
    shutil.rmtree(BADPATH_ARTIFACTS, ignore_errors=True)
    BADPATH_ARTIFACTS.mkdir(parents=True)
    baton = ROOT / ".venv" / "bin" / "baton"
    settings = {**BASE_SETTINGS, "baton.server.path": [str(baton)]}
    env = {"BATON_HOME": str(baton_home)}
    with code_server(tools, vsix, repo, tmp_path, settings, env, BADPATH_ARTIFACTS) as wb:
        steps = drive(
            "badpath.mjs",
            wb,
            tools,
            BADPATH_ARTIFACTS,
            240,
            BATON_E2E_MACHINE_SETTINGS=str(wb.user_data / "Machine" / "settings.json"),
            BATON_E2E_BATON=str(baton),
        )
        log = "\n".join(
            f.read_text(errors="replace") for f in (wb.user_data / "logs").rglob("*Baton*.log")
        )
    by = {s["step"]: s for s in steps}
    assert "done" in by
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
def test_status_bar_says_agents_run_unsandboxed(
    tools: Tools, vsix: Path, repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    """``sandbox = "off"`` in the user's config: the status bar item reads "Baton:
    unsandboxed" with a warning icon and background, its tooltip says why and how to fix
    it; rewriting the config (here, as the user would) turns it back to idle."""
    shutil.rmtree(SANDBOX_ARTIFACTS, ignore_errors=True)
    SANDBOX_ARTIFACTS.mkdir(parents=True)
    config = user_config(tmp_path, 'sandbox = "off"\n')
    (tmp_path / "fixed").mkdir()
    fixed = user_config(tmp_path / "fixed")  # the same, without the setting
    settings = {
        **BASE_SETTINGS,
        "baton.server.path": [str(ROOT / ".venv" / "bin" / "baton"), "lsp"],
    }
    env = {"BATON_HOME": str(baton_home)}
    with code_server(tools, vsix, repo, tmp_path, settings, env, SANDBOX_ARTIFACTS) as wb:
        steps = drive(
            "sandbox.mjs",
            wb,
            tools,
            SANDBOX_ARTIFACTS,
            180,
            BATON_E2E_USER_CONFIG=str(config),
            BATON_E2E_FIXED_CONFIG=fixed.read_text(),
        )
    by = {s["step"]: s for s in steps}
    assert "done" in by
    warned = by["unsandboxed"]
    assert warned["text"].strip() == "Baton: unsandboxed", warned
    assert warned["icon"] and warned["warned"], warned
    assert 'agents run UNSANDBOXED, with all you can reach (sandbox = "off"' in warned["status"]
    assert 'Remove sandbox = "off" from your user config' in warned["status"]
    fixed_step = by["fixed"]
    assert "idle" in fixed_step["status"] and not fixed_step["icon"], fixed_step
    assert "unsandboxed" not in fixed_step["text"]
