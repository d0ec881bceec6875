"""The harness of the VS Code client's end-to-end tests: code-server (under Node 24) with the
built .vsix installed, opened on a temporary git repository, and a driver of
clients/vscode/test/e2e (playwright-core in headless Debian Chromium) that clicks and types in
it like a user, one checked step at a time, with a screenshot per step in artifacts/.

A test says what the repository, the fake agent's script and the user's settings are, runs a
driver with :meth:`VSCode.run`, and checks the steps it returns (:class:`Run`). The fixtures
``tools``, ``vsix`` and ``vscode`` are tests/e2e/conftest.py's.

Set-up: scripts/install-vscode-test installs and caches Chromium, Node 24, code-server and
the extension's npm packages. If it cannot, the test FAILS saying what is missing: it never
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

ROOT = Path(__file__).resolve().parents[3]
EXTENSION = ROOT / "clients" / "vscode"
DRIVERS = EXTENSION / "test" / "e2e"
BATON = ROOT / ".venv" / "bin" / "baton"
#: ``baton.server.path`` for this checkout's server.
SERVER = [str(BATON), "lsp"]
#: What the tests' fixture repository's app.py holds (tests/conftest.py's ``repo``).
APP = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"

#: The user settings of every test: a quiet workbench, CodeLenses on.
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


@dataclass(frozen=True)
class Tools:
    node24: Path
    code_server: Path
    chromium: Path


def _loud(message: str) -> None:
    print(f"\n*** VS Code e2e cannot run: {message} ***\n", file=sys.stderr)
    pytest.fail(f"VS Code e2e cannot run: {message}", pytrace=False)


# Once per session, not per module: every VS Code module uses the fixtures built on these
# two, and a module-scoped fixture runs again in each module (`npm run package` builds a
# wheel too: seconds each time). A failure is not cached: the next module tries again.
@functools.cache
def installed() -> Tools:
    """Everything installed (or found cached); fails loudly when something cannot be."""
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
def packaged(tools: Tools) -> Path:
    """The extension built and packaged by its own build (`npm run package`: esbuild + vsce)."""
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

    def baton_log(self) -> str:
        """What the extension has written to its Baton output channels."""
        return "\n".join(
            f.read_text(errors="replace") for f in (self.user_data / "logs").rglob("*Baton*.log")
        )


def user_data_of(tmp_path: Path) -> Path:
    """The user data folder of the code-server :func:`code_server` runs in ``tmp_path``."""
    return tmp_path / "ud"


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
    broker's ``127.0.0.1``). Its logs are copied into ``artifacts`` once it is stopped."""
    user_data, extensions = user_data_of(tmp_path), tmp_path / "ext"
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
        [str(tools.node24), str(DRIVERS / script)],
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


@dataclass(frozen=True)
class Run:
    """What a driver saw, step by step, and what the extension logged meanwhile."""

    steps: list[dict[str, Any]]
    log: str
    artifacts: Path
    workbench: Workbench

    @property
    def by(self) -> dict[str, dict[str, Any]]:
        """The steps by name."""
        return {s["step"]: s for s in self.steps}

    def assert_screenshots(self, count: int | None = None, *, at_least: int = 1) -> None:
        """A screenshot of every step is in the artifacts (``count`` of them, when given),
        and none of a failed step."""
        shots = sorted(p.name for p in self.artifacts.glob("*.png"))
        assert not any("FAILED" in s for s in shots), shots
        assert len(shots) == count if count is not None else len(shots) >= at_least, shots


@dataclass(frozen=True)
class VSCode:
    """code-server for one test: the tools, the .vsix, the fixture repository, the test's
    BATON_HOME and its temporary folder."""

    tools: Tools
    vsix: Path
    repo: Path
    home: Path
    tmp: Path

    def fake_script(self, script: dict[str, Any]) -> Path:
        """``script`` written for the fake agent (BATON_FAKE_SCRIPT)."""
        path = self.tmp / "script.json"
        path.write_text(json.dumps(script))
        return path

    def settings(self, script: dict[str, Any] | None = None, **extra: object) -> dict[str, object]:
        """The user's settings: :data:`BASE_SETTINGS`, this checkout's server with this test's
        BATON_HOME (and the fake agent playing ``script``) through ``baton.server.env``, so
        the setting is what is tested, and ``extra``."""
        env = {"BATON_HOME": str(self.home)}
        if script is not None:
            env["BATON_FAKE_SCRIPT"] = str(self.fake_script(script))
        return {**BASE_SETTINGS, "baton.server.path": SERVER, "baton.server.env": env, **extra}

    @property
    def machine_settings(self) -> Path:
        """The settings file of the server machine (where ``baton.server.*`` is read)."""
        return user_data_of(self.tmp) / "Machine" / "settings.json"

    def run(
        self,
        driver: str,
        artifacts: Path,
        timeout: float,
        settings: dict[str, object],
        *,
        env: dict[str, str] | None = None,
        host: str = "127.0.0.1",
        instruction: str | None = None,
        **driver_env: str,
    ) -> Run:
        """Run ``driver`` (a file of clients/vscode/test/e2e) in code-server opened with
        ``settings`` (and ``env``, BATON_HOME alone when not given), its screenshots into
        ``artifacts`` (emptied first); it must get to its last step, "done". The driver's
        BATON_E2E_FILE is app.py unless ``driver_env`` says otherwise, its
        BATON_E2E_INSTRUCTION ``instruction``."""
        shutil.rmtree(artifacts, ignore_errors=True)
        artifacts.mkdir(parents=True)
        env = {"BATON_HOME": str(self.home)} if env is None else env
        driver_env = {"BATON_E2E_FILE": "app.py", **driver_env}
        if instruction is not None:
            driver_env["BATON_E2E_INSTRUCTION"] = instruction
        with code_server(
            self.tools, self.vsix, self.repo, self.tmp, settings, env, artifacts, host
        ) as wb:
            steps = drive(driver, wb, self.tools, artifacts, timeout, **driver_env)
            log = wb.baton_log()
        run = Run(steps, log, artifacts, wb)
        assert "done" in run.by, steps
        return run

    def tasks(self) -> list[dict[str, Any]]:
        """The broker's tasks (``baton tasks --json``), newest first."""
        listed = subprocess.run(
            [str(BATON), "tasks", "--json"],
            capture_output=True,
            text=True,
            env={**os.environ, "BATON_HOME": str(self.home)},
            cwd=self.repo,
            timeout=60,
        )
        assert listed.returncode == 0, listed.stderr
        tasks = json.loads(listed.stdout)
        return list(tasks["tasks"] if isinstance(tasks, dict) else tasks)
