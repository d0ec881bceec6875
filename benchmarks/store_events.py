"""How many events per second the Store persists through ``append_events``.

The runtime batches what arrives within a tick (up to ~256 events) into one transaction;
a batch of 1 is the worst case (one commit per event). Prints the median of several runs,
and beside each the floor measured in the same runs: the same rows (JSON data) inserted with
the standard sqlite3 module into a bare events table (WAL, ``synchronous=NORMAL``, one
transaction per batch), as time per event.
Run: .venv/bin/python benchmarks/store_events.py [--quick]
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from baton.core.events import Event, EventType
from baton.core.task import Task, new_task_id
from baton.store import Store
from figures import figure

TARGET = 20_000
RUNS = 5
TASKS = 4


def make_events(task_ids: list[str], count: int) -> list[Event]:
    """A realistic mix: mostly streamed text deltas, some tool calls, interleaved tasks."""
    out = []
    for i in range(count):
        tid = task_ids[i % len(task_ids)]
        if i % 10 == 9:
            data = {"name": "edit", "input": f"src/module_{i}.py", "files": [f"src/module_{i}.py"]}
            out.append(Event(EventType.TOOL, data, task_id=tid, attempt=1))
        else:
            text = f"token {i} of the streamed answer, with some words in it "
            out.append(Event(EventType.TEXT, {"text": text, "delta": True}, task_id=tid, attempt=1))
    return out


def run(batch: int, count: int) -> float:
    """Events per second for ``count`` events appended in batches of ``batch``."""
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "baton.db") as store:
        ids = [new_task_id() + str(n) for n in range(TASKS)]
        for tid in ids:
            store.insert_task(Task(id=tid, instruction="benchmark", root="/bench"))
        events = make_events(ids, count)
        start = time.perf_counter()
        for i in range(0, count, batch):
            store.append_events(events[i : i + batch])
        elapsed = time.perf_counter() - start
        assert store.last_seq(ids[0]) == (count + TASKS - 1) // TASKS
        return count / elapsed


def bare(batch: int, count: int) -> float:
    """Events per second for the same rows through sqlite3 alone, into a bare table."""
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(Path(tmp) / "bare.db", isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(
            "CREATE TABLE events (task_id TEXT, seq INTEGER, ts REAL, attempt INTEGER, "
            "type TEXT, data TEXT, PRIMARY KEY (task_id, seq))"
        )
        ids = [new_task_id() + str(n) for n in range(TASKS)]
        events = make_events(ids, count)
        start = time.perf_counter()
        seq = dict.fromkeys(ids, 0)
        for i in range(0, count, batch):
            rows = []
            for e in events[i : i + batch]:
                seq[e.task_id] += 1
                rows.append((e.task_id, seq[e.task_id], time.time(), e.attempt, str(e.type),
                             json.dumps(e.data)))  # fmt: skip
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", rows)
            conn.execute("COMMIT")
        elapsed = time.perf_counter() - start
        conn.close()
        return count / elapsed


def main() -> None:
    quick = "--quick" in sys.argv
    runs, many, few = (3, 10_000, 500) if quick else (RUNS, 100_000, 5_000)
    for batch, count in ((256, many), (1, few)):
        ours: list[float] = []
        floor: list[float] = []
        for i in range(runs):  # interleaved, the order alternating
            for case in (run, bare) if i % 2 == 0 else (bare, run):
                (ours if case is run else floor).append(case(batch, count))
        rate = statistics.median(ours)
        print(
            f"events_per_second_batch_{batch}: {rate:.0f}"
            + (f" (target >= {TARGET})" if batch > 1 else " (one commit per event)")
        )
        figure(
            f"event persisted, batch {batch}",
            1e6 / rate,
            1e6 / statistics.median(floor),
            "the same rows through sqlite3 alone into a bare table",
            unit="µs/event",
            runs=runs,
        )


if __name__ == "__main__":
    main()
