"""A worker's concurrency across brokers (:mod:`baton.runtime.slots`): two brokers of one
state home share the cap, and a broker that dies lets go of its places."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

from baton.config.profiles import Profile, default_profiles
from baton.core.lifecycle import TaskState
from baton.runtime.supervisor import Supervisor
from tests.conftest import settle
from tests.integration.test_supervisor import delegate

S = TaskState

#: Another broker holding the fake worker's one place until it is killed.
HOLDER = r"""
import fcntl, os, sys, time
folder = sys.argv[1]
os.makedirs(folder, exist_ok=True)
fd = os.open(os.path.join(folder, "fake.0.lock"), os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("holding", flush=True)
time.sleep(600)
"""


def capped() -> dict[str, Profile]:
    profiles = default_profiles()
    profiles["fake"].concurrency = 1
    return profiles


async def test_two_brokers_share_a_workers_concurrency(baton_home: Path, repo: Path) -> None:
    first = Supervisor(baton_home, profiles=capped())
    second = Supervisor(baton_home, profiles=capped())
    await first.start()
    await second.start()
    try:
        a = await first.delegate(delegate(repo, {"sleep": 1.0}))
        deadline = time.monotonic() + 30
        while (await first.get(a.id)).state != S.RUNNING:
            assert time.monotonic() < deadline, "the first task never ran"
            await asyncio.sleep(0.02)
        b = await second.delegate(delegate(repo, {"say": "b"}))
        await asyncio.sleep(0.5)
        assert (await second.get(b.id)).state == S.QUEUED  # the one place is the first's
        assert await settle(second, b.id) == S.ANSWERED
        assert await settle(first, a.id) == S.ANSWERED
        [ran_a] = await first.attempts(a.id)
        [ran_b] = await second.attempts(b.id)
        assert ran_a.ended_at is not None and ran_b.started_at is not None
        assert ran_b.started_at >= ran_a.ended_at, (ran_a, ran_b)  # never both at once
    finally:
        await first.close()
        await second.close()


async def test_a_place_held_by_a_broker_that_dies_is_free_again(
    baton_home: Path, repo: Path
) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(baton_home / "slots")],
        stdout=subprocess.PIPE,
        text=True,
    )
    sup = Supervisor(baton_home, profiles=capped())
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        await sup.start()
        task = await sup.delegate(delegate(repo, {"say": "hi"}))
        await asyncio.sleep(1.0)
        assert (await sup.get(task.id)).state == S.QUEUED  # another broker has the place
        holder.kill()  # as kill -9 would: its lock goes with it
        holder.wait()
        assert await settle(sup, task.id) == S.ANSWERED
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        await sup.close()
