"""What the broker adds per task stays near what a plain script pays, and its shortcuts hold.

The bound is generous (a loaded machine moves every figure): created → agent started (the
fake agent's first act, from its run log) within 10 times a raw fork/exec of the same fake agent
measured in the same test, interleaved. Before the per-task work was trimmed it was 3 to 4 times.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from baton.core.events import EventType
from baton.process.exitwatch import ExitWatch
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor
from baton.store.paths import task_dir
from baton.workspace import gitconfig
from baton.workspace.gitconfig import repo_config
from tests.conftest import fake_script, git

ROUNDS = 3


def _runs(runlog: Path, where: str) -> list[dict[str, object]]:
    lines = runlog.read_text().splitlines() if runlog.exists() else []
    return [r for r in map(json.loads, lines) if where in (r.get("task_dir"), r.get("cwd"))]


def _raw_start(runlog: Path, cwd: Path, prompt: Path) -> float:
    """Seconds from a raw Popen of the fake agent to its first act (its run log line)."""
    start = time.time()
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "baton.agents.fake_agent", "--prompt-file", str(prompt)],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert proc.wait(timeout=60) == 0
    return float(_runs(runlog, str(cwd))[-1]["time"]) - start  # type: ignore[arg-type]


async def _baton_start(sup: Supervisor, repo: Path, runlog: Path, prompt: str) -> float:
    """Seconds from a task's creation to its fake agent's first act; it ends in review."""
    sub = sup.subscribe(None)
    task = await sup.delegate(DelegateRequest(prompt, str(repo)))
    while True:
        e = await asyncio.wait_for(sub.get(), 60)
        assert e is not None
        waiting = ("preparing", "queued", "running")
        if e.task_id == task.id and e.type == EventType.STATE and e.data["to"] not in waiting:
            break
    sub.close()
    assert e.data["to"] == "review", e.data
    runs = _runs(runlog, str(task_dir(sup.home, task.id)))
    assert len(runs) == 1
    return float(runs[0]["time"]) - task.created_at  # type: ignore[arg-type]


@pytest.mark.slow
async def test_created_to_agent_started_within_ten_raw_fork_execs(
    sup: Supervisor, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runlog = tmp_path / "runs.jsonl"
    monkeypatch.setenv("BATON_FAKE_RUNLOG", str(runlog))
    script = fake_script({"write": "notes.txt", "content": "changed\n"}, {"say": "done"})
    prompt = tmp_path / "raw-prompt.md"
    prompt.write_text(script)
    raw_dir = tmp_path / "raw"
    raw_dir.mkdir()
    (raw_dir / "notes.txt").write_text("one\ntwo\n")
    await _baton_start(sup, repo, runlog, script)  # warm: imports, page cache
    _raw_start(runlog, raw_dir, prompt)
    baton: list[float] = []
    floor: list[float] = []
    for i in range(ROUNDS):
        if i % 2:
            floor.append(_raw_start(runlog, raw_dir, prompt))
        baton.append(await _baton_start(sup, repo, runlog, script))
        if not i % 2:
            floor.append(_raw_start(runlog, raw_dir, prompt))
    ours, raw = statistics.median(baton), statistics.median(floor)
    assert ours <= 10 * raw, f"created → agent started {ours * 1000:.0f} ms, raw {raw * 1000:.0f}"


async def test_exit_watch_wakes_at_the_end_not_at_the_timeout() -> None:
    proc = subprocess.Popen(["sleep", "0.3"])
    try:
        watch = ExitWatch(proc.pid, None)
        assert watch.watching or not hasattr(os, "pidfd_open")
        start = time.monotonic()
        await watch.wait(30)
        took = time.monotonic() - start
        if watch.watching or hasattr(os, "pidfd_open"):
            assert took < 15, took  # woken by the end, not by the 30 s timeout
        start = time.monotonic()
        await watch.wait(0.05)  # the end was told once: now it only sleeps
        assert time.monotonic() - start >= 0.04
        watch.close()
    finally:
        proc.wait()


async def test_exit_watch_of_a_gone_process_only_sleeps() -> None:
    proc = subprocess.Popen(["true"])
    proc.wait()
    watch = ExitWatch(proc.pid, None)
    assert not watch.watching
    start = time.monotonic()
    await watch.wait(0.05)
    assert time.monotonic() - start >= 0.04
    watch.close()


def test_repo_config_is_read_again_only_after_a_change(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Path] = []
    read = gitconfig._read

    def counting(git_dir: Path) -> tuple[dict[str, str], list[Path]]:
        calls.append(git_dir)
        return read(git_dir)

    monkeypatch.setattr(gitconfig, "_read", counting)
    git_dir = repo / ".git"
    first = repo_config(git_dir)
    assert first["user.name"] == "Test"  # the test's global config
    assert repo_config(git_dir) == first and len(calls) == 1  # nothing changed: no git
    git(repo, "config", "user.name", "Someone Else")
    assert repo_config(git_dir)["user.name"] == "Someone Else"
    assert len(calls) == 2
    other = repo.parent / "global-config"
    other.write_text("[core]\n\tattributesFile = ~/attrs\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(other))
    assert repo_config(git_dir).get("core.attributesfile") == "~/attrs"
    assert len(calls) == 3
