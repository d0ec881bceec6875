"""The real Claude Code CLI, interactive, in a private tmux server: for tests of its IDE
integration (print mode never connects to an IDE, so these tests need a terminal).

    seed_claude_config(cfg, workspace)
    launch = tui_launch(srv, home, cfg, ide_port=server.port)
    with ClaudeTui(launch, workspace) as tui:
        await tui.until("for shortcuts")
        tui.submit("Create new.txt")
        ...

Each `ClaudeTui` runs its own tmux server (`tmux -L <unique name>`), with `remain-on-exit` so a
crash stays readable, and `close()` kills that server and every process left in the pane's
session, even when the test failed. Facts used here are in
the shared notes, claude-ide-protocol.md.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import psutil
import pytest

from tests.support.modelserver import ModelServer, agent_bin, env_for_claude

WIDTH, HEIGHT = 200, 50


def require_tmux() -> str:
    """The tmux binary; skips the test LOUDLY when it is missing (like a missing agent CLI)."""
    found = shutil.which("tmux")
    if found is None:
        pytest.skip(
            "!!! tmux IS NOT INSTALLED: the interactive Claude Code tests need it; "
            "run scripts/install-agents (it installs tmux with apt-get) !!!"
        )
    return found


def seed_claude_config(config_dir: Path, workspace: Path, *, api_key: str = "dummy") -> Path:
    """`<config_dir>/.claude.json` with every first-run dialog already answered: onboarding
    done, the API key approved, the workspace trusted. Returns the file."""
    config_dir.mkdir(parents=True, exist_ok=True)
    project = {
        "hasTrustDialogAccepted": True,
        "hasCompletedProjectOnboarding": True,
        "projectOnboardingSeenCount": 1,
        "allowedTools": [],
    }
    data = {
        "hasCompletedOnboarding": True,
        "lastOnboardingVersion": "2.1.197",
        "theme": "dark",
        "numStartups": 5,
        "customApiKeyResponses": {"approved": [api_key[-20:]], "rejected": []},
        "hasIdeOnboardingBeenShown": {"vscode": True},
        "autoConnectIde": True,
        "projects": {str(workspace): project, str(workspace.resolve()): project},
    }
    path = config_dir / ".claude.json"
    path.write_text(json.dumps(data, indent=2))
    return path


@dataclass
class TuiLaunch:
    """The argv and the environment (complete, nothing inherited) of an interactive claude."""

    argv: list[str]
    env: dict[str, str]


def tui_launch(
    srv: ModelServer,
    home: Path,
    config_dir: Path,
    *,
    ide_port: int | None = None,
    proxy: str | None = None,
    model: str = "claude-sonnet-4-5",
) -> TuiLaunch:
    """Interactive `claude --model …` against the scripted model server, offline, in the
    default permission mode (the diff is part of the permission prompt), with HOME and
    CLAUDE_CONFIG_DIR under `home`/`config_dir`; connected to the IDE server on `ide_port`."""
    env = env_for_claude(srv, home, proxy=proxy).env
    env.pop("CI", None)  # an interactive terminal, not a CI run
    env.pop("NO_COLOR", None)
    env.update(
        {
            "TERM": "xterm-256color",
            "COLUMNS": str(WIDTH),
            "LINES": str(HEIGHT),
            "CLAUDE_CONFIG_DIR": str(config_dir),
            "CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL": "1",
            # Interactive mode installs the official plugin marketplace (a download) otherwise.
            "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
        }
    )
    if ide_port is not None:
        env["CLAUDE_CODE_SSE_PORT"] = str(ide_port)
        env["ENABLE_IDE_INTEGRATION"] = "true"
    return TuiLaunch([str(agent_bin("claude")), "--model", model], env)


@dataclass
class ClaudeTui:
    """One claude process in a detached tmux pane of a private tmux server."""

    launch: TuiLaunch
    cwd: Path
    socket: str = field(default_factory=lambda: f"baton-test-{uuid.uuid4().hex[:12]}")
    pane_pid: int | None = None
    socket_path: Path | None = None

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=check,
            env={**os.environ, "TMUX": ""},
        )

    def start(self) -> ClaudeTui:
        require_tmux()
        conf = self.cwd.parent / f".{self.socket}.conf"
        conf.write_text("set -g remain-on-exit on\nset -g history-limit 5000\n")
        env_args = [f"{k}={v}" for k, v in sorted(self.launch.env.items())]
        self.tmux(
            "-f",
            str(conf),
            "new-session",
            "-d",
            "-s",
            "claude",
            "-x",
            str(WIDTH),
            "-y",
            str(HEIGHT),
            "-c",
            str(self.cwd),
            "--",
            "env",
            "-i",
            *env_args,
            *self.launch.argv,
        )
        out = self.tmux("display-message", "-p", "-t", "claude", "#{pane_pid} #{socket_path}")
        pid, path = out.stdout.strip().split(" ", 1)
        self.pane_pid, self.socket_path = int(pid), Path(path)
        return self

    def close(self) -> None:
        """Kill the tmux server and whatever the claude process left running."""
        procs: list[psutil.Process] = []
        if self.pane_pid is not None:
            try:
                root = psutil.Process(self.pane_pid)
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                procs = []
        self.tmux("kill-server", check=False)
        for proc in procs:
            try:
                proc.send_signal(signal.SIGKILL)
            except psutil.Error:
                pass
        psutil.wait_procs(procs, timeout=5)
        self.pane_pid = None
        if self.socket_path is not None:  # tmux leaves its socket file behind
            self.socket_path.unlink(missing_ok=True)
            (self.cwd.parent / f".{self.socket}.conf").unlink(missing_ok=True)

    def __enter__(self) -> ClaudeTui:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- looking at the terminal -------------------------------------------------------------

    def screen(self, history: int = 0) -> str:
        """The pane's text now (plus `history` lines of scrollback)."""
        args = ["capture-pane", "-p", "-J", "-t", "claude"]
        if history:
            args += ["-S", f"-{history}"]
        return self.tmux(*args, check=False).stdout

    def alive(self) -> bool:
        out = self.tmux("display-message", "-p", "-t", "claude", "#{pane_dead}", check=False)
        return out.returncode == 0 and out.stdout.strip() == "0"

    def _match(self, pattern: str | re.Pattern[str]) -> str | None:
        text = self.screen(history=200)
        found = re.search(pattern, text) if isinstance(pattern, re.Pattern) else pattern in text
        return text if found else None

    async def until(self, pattern: str | re.Pattern[str], timeout: float = 20.0) -> str:
        """Wait (without blocking the event loop) until the pane shows `pattern`."""
        deadline = time.monotonic() + timeout
        while True:
            text = await asyncio.to_thread(self._match, pattern)
            if text is not None:
                return text
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"the terminal never showed {pattern!r}; it shows:\n{self.screen(200)}"
                )
            await asyncio.sleep(0.1)

    def wait_for(self, pattern: str | re.Pattern[str], timeout: float = 20.0) -> str:
        """The blocking form of :meth:`until` (for tests without an event loop)."""
        deadline = time.monotonic() + timeout
        while True:
            text = self._match(pattern)
            if text is not None:
                return text
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"the terminal never showed {pattern!r}; it shows:\n{self.screen(200)}"
                )
            time.sleep(0.1)

    # -- typing ------------------------------------------------------------------------------

    def type(self, text: str) -> None:
        """Type literal text (no key names)."""
        self.tmux("send-keys", "-t", "claude", "-l", text)

    def press(self, *keys: str) -> None:
        """Press keys by tmux name: "Enter", "Escape", "Down", "C-c"..."""
        self.tmux("send-keys", "-t", "claude", *keys)

    def submit(self, prompt: str) -> None:
        """Type a prompt, then Enter a moment later (typed together, Enter could be pasted)."""
        self.type(prompt)
        time.sleep(0.3)
        self.press("Enter")


def transcript(config_dir: Path) -> list[dict[str, Any]]:
    """Every entry of the session transcripts under `<config_dir>/projects` (JSONL)."""
    entries: list[dict[str, Any]] = []
    for path in sorted((config_dir / "projects").glob("*/*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entries.append(json.loads(line))
            except ValueError:
                continue
    return entries
