"""A cancel's SIGTERM reaches a sandboxed agent, which ends in its own time: bubblewrap runs
with the stop signals ignored (set by Baton's wrapper, ``--ignore-stop``, without an ``env``
process of its own) and the agent with them restored, whether a spare wrapper runs it or
one started for it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from baton.agents.base import Launch
from baton.process import sandbox, spare
from baton.process.spawn import kill_tree, spawn, wait_exit

TRAP = "trap 'echo got TERM; exit 7' TERM; echo up; while :; do sleep 0.05; done"


@pytest.mark.parametrize("by_spare", [False, True], ids=["started", "spare"])
async def test_a_sandboxed_agent_hears_the_cancel(tmp_path: Path, by_spare: bool) -> None:
    if not sandbox.status().works or not sandbox.status().graceful:
        pytest.skip("no sandbox with a graceful stop here")
    work = tmp_path / "work"
    work.mkdir()
    if by_spare:
        deadline = time.monotonic() + 30
        while spare._spare is None:
            assert time.monotonic() < deadline, "no spare wrapper came"
            spare.ask()
            await asyncio.sleep(0.02)
    else:
        spare.close()  # none: a wrapper is started for the attempt
    try:
        launch = Launch(argv=["/bin/sh", "-c", TRAP], cwd=str(work))
        confinement = sandbox.confine(launch, tmp_path / "task", {})
        assert confinement.sandboxed and confinement.ignoring
        assert "--ignore-signal=TERM,INT,HUP" not in confinement.bare(launch.argv)
        record = spawn(launch, tmp_path / "task", 1, confinement)
        deadline = time.monotonic() + 30
        while "up" not in record.out_path.read_text():
            assert time.monotonic() < deadline, record.err_path.read_text()
            await asyncio.sleep(0.02)
        await kill_tree(record.pid, grace=10.0, create_time=record.create_time)
        ended = await wait_exit(record)
    finally:
        spare._closed = False
    assert "got TERM" in record.out_path.read_text()
    assert ended is not None and ended.code == 7 and ended.received == "SIGTERM"
