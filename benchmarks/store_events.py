"""How many events per second the Store persists through ``append_events``.

The runtime batches what arrives within a tick (up to ~256 events) into one transaction;
a batch of 1 is the worst case (one commit per event). Prints the median of several runs.
Run: .venv/bin/python benchmarks/store_events.py
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from baton.core.events import Event, EventType
from baton.core.task import Task, new_task_id
from baton.store import Store

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


def main() -> None:
    batched = statistics.median(run(256, 100_000) for _ in range(RUNS))
    single = statistics.median(run(1, 5_000) for _ in range(RUNS))
    print(f"events_per_second_batched: {batched:.0f} (target >= {TARGET}, batch 256)")
    print(f"events_per_second_single: {single:.0f} (batch 1, one commit per event)")


if __name__ == "__main__":
    main()
