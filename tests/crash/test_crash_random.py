"""Kill -9 the broker at random moments, round after round, while three fake tasks stream.

Each round a broker adopts the tasks (the first one delegates them) and is killed from
outside: at a random time after it started, or a random instant (< 0.3 s) after an agent
process started or an exit record appeared — the moments where crashes used to hurt. Then a
broker of this process finishes the tasks: each must reach review with exactly its agent's
work, and accept must land it. ``BATON_CRASH_SEED`` replays a run's choices (the seed is in
every failure message); ``BATON_CRASH_ROUNDS`` sets the number of kills.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

from tests.crash.harness import DEADLINE, Broker, Lab
from tests.crash.invariants import Work, check_accepted, check_task

pytestmark = pytest.mark.crash

ROUNDS = int(os.environ.get("BATON_CRASH_ROUNDS", "4"))
#: A kill waiting for an agent to start or end waits this long at most, then kills anyway.
TRIGGER_WAIT = 3.0


def streamer(lab: Lab, tag: str, first_step: dict[str, object], lines: int) -> Work:
    """A change, ``lines`` lines of text streamed at 10 a second, a new file, more text."""
    return Work.of(
        lab.repo,
        [
            {"say": f"{tag} begins"},
            first_step,
            {"stream": lines, "rate": 10, "size": 48},
            {"write": f"{tag}/made.txt", "content": f"made by {tag}\n"},
            {"stream": 5, "rate": 10, "size": 48},
            {"say": f"{tag} ends"},
        ],
        f"{tag} finished",
    )


def exit_records(home: Path) -> set[Path]:
    return set((home / "tasks").glob("*/*.exit"))


def kill_at_random(lab: Lab, broker: Broker, rng: random.Random, tasks: int) -> str:
    """Kill ``broker`` at a moment chosen by ``rng``; a note saying which moment it was."""
    runs, exits = len(lab.runs()), exit_records(lab.home)
    # An exit record being read is where most went wrong: it is picked twice as often.
    moments = ["time"] + ["spawn"] * (runs < tasks) + ["exit", "exit"] * (len(exits) < tasks)
    how = rng.choice(moments)
    deadline = time.monotonic() + TRIGGER_WAIT
    if how == "spawn":
        while len(lab.runs()) == runs and time.monotonic() < deadline:
            time.sleep(0.005)
    elif how == "exit":
        while exit_records(lab.home) <= exits and time.monotonic() < deadline:
            time.sleep(0.005)
    delay = rng.uniform(0.0, 1.0 if how == "time" else 0.3)
    time.sleep(delay)
    fired = how == "time" or time.monotonic() < deadline
    assert broker.proc.poll() is None, f"the broker ended by itself; {broker.report()}"
    broker.kill()
    return f"{how}+{delay:.2f}" if fired else f"({how} never came)+{delay:.2f}"


async def test_random_kills_while_three_tasks_stream(lab: Lab) -> None:
    seed = int(os.environ.get("BATON_CRASH_SEED", str(time.time_ns() % 1_000_000)))
    rng = random.Random(seed)
    works = [
        streamer(
            lab, "x", {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"}, 5
        ),
        streamer(lab, "y", {"append": "notes.txt", "text": "six\n"}, 12),
        streamer(
            lab, "z", {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"}, 20
        ),
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
        kills.append(kill_at_random(lab, broker, rng, len(works)))
    sup = await lab.restart()
    where = f"seed {seed}, kills {kills}"
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
