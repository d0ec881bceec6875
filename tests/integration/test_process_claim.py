"""An attempt's claim: its process is found from the task's folder alone, never started twice.

Real processes: a starter that is SIGKILLed right after spawning (so nothing recorded the
pid), a second spawn of a live attempt, a second wrapper for the same attempt.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from baton.agents.base import Launch
from baton.process.spawn import (
    AttemptRunning,
    claim_paths,
    ever_started,
    find_attempt,
    is_alive,
    kill_tree,
    read_exit,
    spawn,
    wait_exit,
)

PY = sys.executable
SLEEPER = Launch(argv=[PY, "-c", "import time; print('up', flush=True); time.sleep(120)"])


async def until(condition: object, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def test_a_never_started_attempt_has_no_trace(tmp_path: Path) -> None:
    assert not ever_started(tmp_path, 1)
    t0 = time.monotonic()
    assert find_attempt(tmp_path, 1) is None
    assert time.monotonic() - t0 < 0.5  # no lock file: nothing to wait for


async def test_a_wrapper_is_found_after_its_starter_was_killed_before_recording_it(
    tmp_path: Path,
) -> None:
    task = tmp_path / "task"
    starter = (
        "import os, signal, sys\nfrom pathlib import Path\nfrom baton.agents.base import Launch\n"
        "from baton.process.spawn import spawn\n"
        f"spawn(Launch(argv={SLEEPER.argv!r}), Path(sys.argv[1]), 3)\n"
        "os.kill(os.getpid(), signal.SIGKILL)  # dies before it can record or print anything\n"
    )
    done = await asyncio.to_thread(
        subprocess.run, [PY, "-c", starter, str(task)], capture_output=True, timeout=60
    )
    assert done.returncode == -signal.SIGKILL and done.stdout == b""
    assert ever_started(task, 3)
    found = await asyncio.to_thread(find_attempt, task, 3)
    assert found is not None
    assert is_alive(found.pid, found.create_time)
    assert os.getpgid(found.pid) == found.pid  # the wrapper, leader of its group
    assert (found.out_path, found.exit_path) == (task / "attempt-3.out", task / "attempt-3.exit")
    await until(lambda: found.out_path.read_text() == "up\n")
    claim = json.loads(claim_paths(task, 3)[1].read_text())
    assert claim["pid"] == found.pid and abs(claim["create_time"] - found.create_time) < 0.05
    await kill_tree(found.pid, 2.0, found.create_time)
    assert await asyncio.to_thread(find_attempt, task, 3) is None  # gone: nobody holds it
    assert ever_started(task, 3)


async def test_a_live_attempt_is_not_spawned_twice(tmp_path: Path) -> None:
    rec = spawn(SLEEPER, tmp_path, 1)
    try:
        await until(lambda: rec.out_path.read_text() == "up\n")
        with pytest.raises(AttemptRunning):
            spawn(SLEEPER, tmp_path, 1)
        assert rec.out_path.read_text() == "up\n"  # its output was not truncated
        assert is_alive(rec.pid, rec.create_time)
        found = await asyncio.to_thread(find_attempt, tmp_path, 1)
        assert found is not None and (found.pid, found.create_time) == (rec.pid, rec.create_time)
    finally:
        await kill_tree(rec.pid, 2.0, rec.create_time)


async def test_a_second_wrapper_for_a_held_attempt_refuses_to_start_its_agent(
    tmp_path: Path,
) -> None:
    rec = spawn(SLEEPER, tmp_path, 1)
    try:
        await until(lambda: rec.out_path.read_text() == "up\n")
        marker = tmp_path / "second-agent-ran"
        argv = [PY, "-c", f"open({str(marker)!r}, 'w').close()"]
        wrapper = [PY, "-P", "-m", "baton.process.wrap", str(rec.exit_path), "--", *argv]
        done = await asyncio.to_thread(
            subprocess.run, wrapper, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 75 and "already runs" in done.stderr
        assert not marker.exists() and read_exit(rec.exit_path) is None
    finally:
        await kill_tree(rec.pid, 2.0, rec.create_time)


async def test_an_ended_attempt_is_not_found_but_was_started(tmp_path: Path) -> None:
    rec = spawn(Launch(argv=[PY, "-c", "pass"]), tmp_path, 2)
    assert await asyncio.wait_for(wait_exit(rec), 60) is not None
    await until(lambda: not is_alive(rec.pid, rec.create_time))
    assert await asyncio.to_thread(find_attempt, tmp_path, 2) is None
    assert ever_started(tmp_path, 2) and not ever_started(tmp_path, 3)
    again = spawn(Launch(argv=[PY, "-c", "pass"]), tmp_path, 2)  # a dead attempt may run anew
    assert await asyncio.wait_for(wait_exit(again), 60) is not None
