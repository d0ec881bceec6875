"""``[[verify]]`` checks run the agent's code (a test suite it may have edited), so they run in
the agent's sandbox (real bubblewrap): a check that tries to read the broker's discovery file,
Baton's database or the user's config, write outside its checkout or leave a process behind
fails each time, while a normal check beside it still passes. The same check with
``sandbox = "off"`` gets through each time, so the test can fail.

Needs bubblewrap (``scripts/test`` installs it); skipped, saying why, where it cannot run.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from baton.core.events import EventType
from baton.core.lifecycle import TaskState
from baton.process import sandbox
from baton.process.sandbox import Status, status
from baton.runtime.checks import Check, run_sandboxed
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor
from tests.conftest import fake_script, settle, user_config
from tests.integration.test_verify import CHECK

needs_sandbox = pytest.mark.skipif(
    not status().works, reason=f"no sandbox can run here: {status().why}"
)

#: A check that tries each escape, says what came of each as one JSON line, and passes.
ESCAPER = r"""
import glob, json, os, subprocess, sys
discovery, database, config, outside, home_file, marker = sys.argv[1:7]
results = {}

def attempt(name, action):
    try:
        action()
        results[name] = "OPEN"
    except Exception as exc:
        results[name] = f"blocked: {type(exc).__name__}: {str(exc)[:60]}"

def read(path):
    with open(path, "rb") as f:
        f.read(1)

def write(path):
    with open(path, "w") as f:
        f.write("escaped\n")

attempt("discovery", lambda: read(discovery))
attempt("database", lambda: read(database))
attempt("user_config", lambda: read(config))
attempt("write_outside", lambda: write(outside))
attempt("write_home", lambda: write(home_file))
attempt("write_checkout", lambda: write("check-wrote-this.txt"))
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", marker],
                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(json.dumps({"escapes": results}), flush=True)
"""
ESCAPES = ("discovery", "database", "user_config", "write_outside", "write_home")


def marked(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if marker in (proc.info["cmdline"] or []) and proc.info["status"] != "zombie":
            found.append(proc)
    return found


class Escape:
    """The escaping check's targets, and its background process to clean up."""

    def __init__(self, baton_home: Path, tmp_path: Path) -> None:
        runtime = Path(os.environ["XDG_RUNTIME_DIR"]) / "baton"
        runtime.mkdir(parents=True, exist_ok=True)
        self.discovery = runtime / "broker-1.json"
        self.discovery.write_text('{"pid": 1, "port": 1, "token": "secret"}')
        self.outside = tmp_path / "outside.txt"
        self.marker = f"baton-check-escape-{os.getpid()}-{time.time_ns()}"
        self.home_file = Path.home() / f".{self.marker}"  # outside /tmp: refused, not absorbed
        targets = [
            self.discovery, baton_home / "baton.db", Path(os.environ["BATON_CONFIG"]),
            self.outside, self.home_file,
        ]  # fmt: skip
        argv = [sys.executable, "-c", ESCAPER, *map(str, targets), self.marker]
        self.check = {"name": "escape", "argv": argv, "timeout": 60}

    def close(self) -> None:
        self.home_file.unlink(missing_ok=True)  # the unsandboxed control writes it
        for proc in marked(self.marker):
            proc.kill()


@pytest.fixture
def escape(baton_home: Path, tmp_path: Path) -> Iterator[Escape]:
    found = Escape(baton_home, tmp_path)
    try:
        yield found
    finally:
        found.close()


async def verified(sup: Supervisor, repo: Path, escape: Escape) -> list[dict[str, Any]]:
    """Delegate an edit checked by the escaping check and the normal one; their events."""
    steps = [{"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"}]
    request = DelegateRequest(
        instruction=fake_script(*steps),
        root=str(repo),
        options={"verify": [escape.check, CHECK], "repair_rounds": 0},
    )
    task = await sup.delegate(request)
    assert await settle(sup, task.id, timeout=90) == TaskState.REVIEW
    done = await sup.get(task.id)
    assert done.message.startswith("checks passed"), done.message
    return [e.data for e in await sup.events(task.id) if e.type == EventType.VERIFY]


def escapes_of(event: dict[str, Any]) -> dict[str, str]:
    line = next(x for x in event["output"].splitlines() if x.startswith('{"escapes"'))
    found: dict[str, str] = json.loads(line)["escapes"]
    return found


@needs_sandbox
async def test_a_check_fails_every_escape_and_a_normal_check_still_passes(
    sup: Supervisor, repo: Path, escape: Escape
) -> None:
    events = await verified(sup, repo, escape)
    assert [(e["name"], e["passed"]) for e in events] == [("escape", True), ("tests", True)]
    assert all(e["sandbox"].startswith("sandboxed (bubblewrap") for e in events), events
    escapes = escapes_of(events[0])
    opened = {k: v for k, v in escapes.items() if k in ESCAPES and not v.startswith("blocked")}
    # outside.txt is under /tmp here: the write lands in the check's private /tmp (checked
    # below, the real file never appears); $HOME is outside /tmp, and read-only.
    assert set(opened) <= {"write_outside"}, f"escapes that got through: {opened}"
    assert "Read-only file system" in escapes["write_home"]
    assert escapes["write_checkout"] == "OPEN"  # its checkout is writable
    assert not escape.outside.exists() and not escape.home_file.exists()
    assert not marked(escape.marker)  # the sandbox took it along
    assert "a() returns 10" in events[1]["output"]


@needs_sandbox
async def test_the_same_check_unsandboxed_gets_through_each_time(
    sup: Supervisor, repo: Path, escape: Escape, tmp_path: Path
) -> None:
    """The control: with ``sandbox = "off"`` every escape above works."""
    user_config(tmp_path, 'sandbox = "off"\n')
    events = await verified(sup, repo, escape)
    assert escapes_of(events[0]) == {name: "OPEN" for name in (*ESCAPES, "write_checkout")}
    assert escape.outside.exists() and escape.home_file.exists()
    assert all(e["sandbox"] == 'unsandboxed (sandbox = "off")' for e in events), events


async def test_require_without_a_sandbox_refuses_to_start_a_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "status", lambda: Status("bubblewrap", False, False, why="gone"))
    check = Check("tests", (sys.executable, "-c", "print('ran')"))
    for mode, ran in (("require", False), ("auto", True)):
        result = run_sandboxed(check, str(tmp_path), tmp_path / "task", mode=mode)
        assert result.passed is ran and ("ran" in result.output) is ran, result
        if not ran:
            assert "no sandbox can run here: gone" in result.error, result
            assert "the check was not started" in result.error
            assert "could not start" in result.label()
        else:
            assert result.sandbox == 'UNSANDBOXED: gone (sandbox = "auto")'


@needs_sandbox
def test_a_missing_check_program_says_so_inside_the_sandbox(tmp_path: Path) -> None:
    check = Check("tests", ("no-such-check-program",))
    result = run_sandboxed(check, str(tmp_path), tmp_path / "task")
    assert result.exit_code is None and "No such file or directory" in result.error, result


@needs_sandbox
def test_a_check_that_times_out_is_killed_with_all_it_started(tmp_path: Path) -> None:
    marker = f"baton-slow-check-{os.getpid()}-{time.time_ns()}"
    code = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', {marker!r}],"
        " start_new_session=True)\n"
        "print('up', flush=True)\ntime.sleep(600)\n"
    )
    check = Check("slow", (sys.executable, "-c", code), timeout=3)
    try:
        result = run_sandboxed(check, str(tmp_path), tmp_path / "task")
        assert result.timed_out and result.exit_code is None and "up" in result.output, result
        deadline = time.monotonic() + 10
        while marked(marker):
            assert time.monotonic() < deadline, "the check's child survived its timeout"
            time.sleep(0.05)
    finally:
        for proc in marked(marker):
            proc.kill()
