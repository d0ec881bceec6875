"""Shared fixtures: real git repositories and an isolated Baton state folder per test."""

from __future__ import annotations

import asyncio
import compileall
import json
import os
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from baton.core.lifecycle import TaskState
from baton.runtime.supervisor import Limits, Supervisor


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile Baton's modules once, before any test starts a process that imports them.

    The suite starts thousands of Python processes that import ``baton`` (brokers, ``baton``
    commands, language servers, wrappers, fake agents). Where ``PYTHONDONTWRITEBYTECODE`` is
    set (as in CI) none of them writes its bytecode, so each compiled every module it imported
    again: a fifth of a second of CPU per broker. Compiled here, they read it (the variable
    only stops writing). Edited sources are still read afresh: the bytecode names their mtime.
    """
    import baton

    compileall.compile_dir(str(Path(baton.__file__).parent), quiet=1)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@localhost", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture(autouse=True)
def _no_claude_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Language servers write Claude Code IDE lock files: into the test's folder, not ~/.claude."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))


def user_config(tmp_path: Path, text: str = "") -> Path:
    """Write the test's user config (the file ``BATON_CONFIG`` names): ``text`` (top-level
    keys first, then tables) with the fake agent as the default worker unless it says else."""
    user = tmp_path / "test-user-config.toml"
    head = (
        ""
        if "default_worker" in text
        else ('default_worker = "fake"  # the tests use the fake agent on purpose\n')
    )
    tail = "" if "[profiles.fake]" in text else '\n[profiles.fake]\nprovider = "fake"\n'
    user.write_text(head + text + tail)
    return user


@pytest.fixture
def baton_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "state"
    monkeypatch.setenv("BATON_HOME", str(home))
    # Never read the developer's own config (~/.config/baton) in tests. Brokers these tests
    # start delegate to the fake agent on purpose: said here, since Baton never picks it alone.
    monkeypatch.setenv("BATON_CONFIG", str(user_config(tmp_path)))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    yield home


@pytest.fixture
def unsandboxed(baton_home: Path, tmp_path: Path) -> None:
    """This test's agents run outside the OS sandbox (``sandbox = "off"`` in the user config):
    for tests of what the wrapper alone does, with host pids the agent writes down."""
    user_config(tmp_path, 'sandbox = "off"\n')


@pytest.fixture
def no_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    """This test's agents run outside the OS sandbox, however started (as where none can run):
    for tests of the wrapper's own reaping, which read host pids the agent writes down."""
    from baton.process import sandbox

    gone = sandbox.Status("none", False, False, why="the test runs its agents unsandboxed")
    monkeypatch.setattr(sandbox, "status", lambda: gone)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with two committed files."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def a():\n    return 1\n\n\ndef b():\n    return 2\n")
    (root / "notes.txt").write_text("one\ntwo\nthree\nfour\nfive\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    return root


def fake_script(*steps: dict[str, Any], summary: str | None = None) -> str:
    """An instruction carrying a script for the fake agent."""
    body: dict[str, Any] = {"steps": list(steps)}
    if summary is not None:
        body["summary"] = summary
    return "Do the scripted work\n\n```baton-fake\n" + json.dumps(body) + "\n```\n"


@pytest.fixture(autouse=True)
def _no_git_config(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests must not depend on the machine's git configuration."""
    cfg = tmp_path_factory.getbasetemp() / "gitconfig"
    if not cfg.exists():
        cfg.write_text(
            "[init]\n\tdefaultBranch = main\n[user]\n\tname = Test\n\temail = test@localhost\n"
        )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    os.environ.pop("GIT_DIR", None)


@pytest.fixture
async def sup(baton_home: Path) -> AsyncIterator[Supervisor]:
    """A broker on a fresh state folder, with the fake agent as its default worker."""
    s = Supervisor(baton_home, limits=Limits(stall_after=30, kill_grace=1.0))
    await s.start()
    yield s
    await s.close()


#: States in which a task waits for someone other than its agent.
STOPPED = frozenset(
    {
        TaskState.REVIEW,
        TaskState.NEEDS_INPUT,
        TaskState.ANSWERED,
        TaskState.FAILED,
        TaskState.CANCELLED,
        TaskState.INTERRUPTED,
        TaskState.RATE_LIMITED,
        TaskState.APPLIED,
        TaskState.REJECTED,
    }
)


async def settle(sup: Supervisor, task_id: str, timeout: float = 20.0) -> TaskState:
    """Wait until the task stops needing its agent; return that state."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = await sup.get(task_id)
        if task.state in STOPPED:
            return task.state
        await asyncio.sleep(0.02)
    raise AssertionError(f"task {task_id} still {(await sup.get(task_id)).state}")
