"""Kill -9 the broker at random moments, round after round, while three fake tasks stream.

Each round a broker adopts the tasks (the first one delegates them) and is killed from
outside at a random time after it started; then a broker of this process finishes them.
Every task must reach review with exactly its agent's work, and accept must land it.
``BATON_CRASH_SEED`` replays a run (the seed is in every failure message);
``BATON_CRASH_ROUNDS`` sets the number of kills.
"""

from __future__ import annotations

import os
import random
import time

import pytest

from tests.crash.harness import DEADLINE, Lab
from tests.crash.invariants import Work, check_accepted, check_task

pytestmark = pytest.mark.crash

ROUNDS = int(os.environ.get("BATON_CRASH_ROUNDS", "3"))


def streamer(lab: Lab, tag: str, first_step: dict[str, object]) -> Work:
    """About 3.5 s of work: a change, text streamed at 10 lines a second, a new file."""
    return Work.of(
        lab.repo,
        [
            {"say": f"{tag} begins"},
            first_step,
            {"stream": 12, "rate": 10, "size": 48},
            {"write": f"{tag}/made.txt", "content": f"made by {tag}\n"},
            {"sleep": 0.5},
            {"stream": 10, "rate": 10, "size": 48},
            {"say": f"{tag} ends"},
        ],
        f"{tag} finished",
    )


async def test_random_kills_while_three_tasks_stream(lab: Lab) -> None:
    seed = int(os.environ.get("BATON_CRASH_SEED", str(time.time_ns() % 1_000_000)))
    rng = random.Random(seed)
    works = [
        streamer(lab, "x", {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"}),
        streamer(lab, "y", {"append": "notes.txt", "text": "six\n"}),
        streamer(lab, "z", {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"}),
    ]
    ids: list[str] = []
    kills = []
    for n in range(ROUNDS):
        if n == 0:
            broker = lab.broker(delegate=[w.request(lab.repo) for w in works], stay=True)
            ids = broker.ids()
        else:
            broker = lab.broker(tasks=ids, stay=True)
            broker.ids()  # printed once it started (and adopted)
        after = rng.uniform(0.0, 1.5)
        time.sleep(after)
        assert broker.proc.poll() is None, f"seed {seed}: broker {n} ended; {broker.report()}"
        broker.kill()
        kills.append(round(after, 2))
    sup = await lab.restart()
    where = f"seed {seed}, kills {kills} s after each broker adopted"
    try:
        await lab.settle_in(sup, ids, timeout=DEADLINE)
        for tid, work in zip(ids, works, strict=True):
            await check_task(sup, lab, tid, work)
        for tid in ids:
            await sup.accept(tid)
        # x and z both change app.py: on disk it has both changes.
        both = {"app.py": "def a():\n    return 10\n\n\ndef b():\n    return 20\n"}
        for tid, work in zip(ids, works, strict=True):
            await check_accepted(sup, lab, tid, work, disk=both)
    except AssertionError as exc:
        raise AssertionError(f"{where}: {exc}") from exc
