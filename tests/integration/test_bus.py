"""The event bus over a real SQLite store: committed before anyone sees it, on the event loop
when it can, on the writer thread when another connection holds the write lock — without
ever stopping the loop."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import threading
import time
from pathlib import Path

from baton.core.events import Event, EventType
from baton.core.task import Task, new_task_id
from baton.runtime.bus import EventBus
from baton.store import AsyncStore, Store


async def open_bus(tmp_path: Path) -> tuple[EventBus, str]:
    path = tmp_path / "baton.db"
    store = await AsyncStore.open(path)
    task = Task(id=new_task_id(), instruction="x", root=str(tmp_path))
    await store.insert_task(task)
    bus = EventBus(store, inline=Store(path, busy_timeout_ms=0, checkpoints=False))
    bus.start()
    return bus, task.id


def texts(task_id: str, n: int, start: int = 0) -> list[Event]:
    return [Event(EventType.TEXT, {"text": f"line {i}"}, task_id=task_id) for i in range(start, n)]


async def test_commits_on_the_loop_thread_and_fans_out_committed_events(tmp_path: Path) -> None:
    bus, task_id = await open_bus(tmp_path)
    seen: list[tuple[int, str]] = []
    bus.add_batch_listener(
        lambda events: seen.extend((e.seq, threading.current_thread().name) for e in events)
    )
    try:
        stamped = await bus.emit(texts(task_id, 5))
        assert [e.seq for e in stamped] == [1, 2, 3, 4, 5]
        assert [s for s, _ in seen] == [1, 2, 3, 4, 5]
        stored = await bus.store.events(task_id)  # through the writer thread's connection
        assert [e.seq for e in stored] == [1, 2, 3, 4, 5]
    finally:
        await bus.close()
        await bus.store.close()


async def test_a_held_write_lock_sends_the_batch_to_the_writer_and_the_loop_runs_on(
    tmp_path: Path,
) -> None:
    bus, task_id = await open_bus(tmp_path)
    other = sqlite3.connect(str(tmp_path / "baton.db"), check_same_thread=False)
    try:
        await bus.emit(texts(task_id, 3))
        assert bus.inline is not None
        by_loop = bus.inline._conn.total_changes
        other.execute("BEGIN IMMEDIATE")  # another broker writing for a while
        ticks: list[float] = []

        async def tick() -> None:
            while True:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.005)

        ticker = asyncio.create_task(tick())
        pending = asyncio.ensure_future(bus.emit(texts(task_id, 6, 3)))
        await asyncio.sleep(0.4)
        assert not pending.done()  # nothing is seen before it is committed
        threading.Timer(0.0, other.commit).start()
        stamped = await asyncio.wait_for(pending, 10)
        ticker.cancel()
        assert [e.seq for e in stamped] == [4, 5, 6]
        assert bus.inline._conn.total_changes == by_loop  # the writer thread wrote them
        gaps = [b - a for a, b in itertools.pairwise(ticks)]
        assert max(gaps) < 0.1, f"the loop stopped for {max(gaps):.3f} s"
        # And the loop connection commits again once the lock is free.
        assert [e.seq for e in await bus.emit(texts(task_id, 8, 6))] == [7, 8]
        stored = await bus.store.events(task_id)
        assert [e.seq for e in stored] == list(range(1, 9))
    finally:
        other.close()
        await bus.close()
        await bus.store.close()


async def test_a_lock_held_a_moment_is_waited_for_on_the_loop_not_behind_the_writer(
    tmp_path: Path,
) -> None:
    """The holder is mostly this broker's writer thread, a short transaction: the batch is
    tried again on the loop a moment later rather than queued behind the writer's work."""
    bus, task_id = await open_bus(tmp_path)
    other = sqlite3.connect(str(tmp_path / "baton.db"), check_same_thread=False)
    try:
        await bus.emit(texts(task_id, 1))
        assert bus.inline is not None
        by_loop = bus.inline._conn.total_changes
        other.execute("BEGIN IMMEDIATE")
        threading.Timer(0.02, other.commit).start()  # well within INLINE_WAIT
        pending = asyncio.ensure_future(bus.emit(texts(task_id, 4, 1)))
        await asyncio.sleep(0)
        assert not pending.done()  # nothing is seen before it is committed
        stamped = await asyncio.wait_for(pending, 10)
        assert [e.seq for e in stamped] == [2, 3, 4]
        assert bus.inline._conn.total_changes > by_loop  # the loop's connection wrote them
        stored = await bus.store.events(task_id)
        assert [e.seq for e in stored] == [1, 2, 3, 4]
    finally:
        other.close()
        await bus.close()
        await bus.store.close()
