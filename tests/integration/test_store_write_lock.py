"""Every write of the store waits its turn for a write lock another connection holds (up to
the busy timeout) instead of failing at once with "database is locked": a deferred
transaction whose statement reads first (the tasks' full-text triggers) was refused at once
by SQLite, so the writer thread lost task records while the loop's connection committed."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from baton.core.events import Event, EventType
from baton.core.lifecycle import TaskState
from baton.core.task import Task, new_task_id
from baton.store import Store


def task(tmp_path: Path) -> Task:
    return Task(id=new_task_id(), instruction="fix the parser", root=str(tmp_path))


def held_for(path: Path, seconds: float) -> threading.Timer:
    """Another connection holding the write lock for ``seconds`` (released by a timer)."""
    other = sqlite3.connect(str(path), check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")

    def release() -> None:
        other.commit()
        other.close()

    timer = threading.Timer(seconds, release)
    timer.start()
    return timer


def save(store: Store, t: Task) -> None:
    t.state = TaskState.PREPARING
    store.save_task(t, owner="b1")


def record(store: Store, t: Task) -> None:
    t.state = TaskState.PREPARING
    store.record(t, owner="b1")


def append(store: Store, t: Task) -> None:
    store.append_events([Event(EventType.TEXT, {"text": "hi"}, task_id=t.id)])


def insert(store: Store, t: Task) -> None:
    store.insert_task(task(Path(t.root)), owner="b1")


@pytest.mark.parametrize("write", [insert, save, record, append], ids=lambda f: f.__name__)
def test_a_write_waits_for_the_lock_another_connection_holds(
    tmp_path: Path, write: Callable[[Store, Task], None]
) -> None:
    """As the writer thread's connection: opened, read from, while the loop's connection
    commits; then another holds the lock a while — the write waits, then commits."""
    path = tmp_path / "baton.db"
    Store(path).close()
    store = Store(path, busy_timeout_ms=10_000)
    loop_side = Store(path, busy_timeout_ms=0, checkpoints=False)
    try:
        t = task(tmp_path)
        loop_side.insert_task(t)
        store.get_task(t.id)
        loop_side.append_events([Event(EventType.TEXT, {"text": "a"}, task_id=t.id)])
        timer = held_for(path, 0.3)
        write(store, t)
        timer.join()
    finally:
        loop_side.close()
        store.close()


def test_a_fresh_connection_waits_to_insert_while_another_commits(tmp_path: Path) -> None:
    path = tmp_path / "baton.db"
    Store(path).close()
    store = Store(path, busy_timeout_ms=10_000)
    loop_side = Store(path, busy_timeout_ms=0, checkpoints=False)
    try:
        loop_side.insert_task(task(tmp_path))  # the other connection commits meanwhile
        timer = held_for(path, 0.3)
        started = time.monotonic()
        t = task(tmp_path)
        store.insert_task(t, owner="b1")  # was: "database is locked" at once
        assert time.monotonic() - started >= 0.2  # it waited for the lock
        timer.join()
        assert store.get_task(t.id).id == t.id
    finally:
        loop_side.close()
        store.close()


def test_a_failed_write_leaves_no_transaction_open(tmp_path: Path) -> None:
    store = Store(tmp_path / "baton.db")
    try:
        t = task(tmp_path)
        store.insert_task(t)
        with pytest.raises(Exception, match="already exists"):
            store.insert_task(t)
        assert not store._conn.in_transaction
        other = task(tmp_path)
        store.insert_task(other)
        assert store.get_task(other.id).id == other.id
    finally:
        store.close()
