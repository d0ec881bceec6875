"""A new task's insert (delegate → id): committed before it is answered, on the event loop
through the bus's own connection when it can (no turn of the writer thread, whose queue
holds event batches and records under load; issue 18), on the writer thread when another
connection holds the write lock — and then still committed before the answer."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from baton.core.task import Task, new_task_id
from baton.runtime.book import Book
from baton.runtime.bus import EventBus
from baton.runtime.groups import GroupFull
from baton.store import AsyncStore, Store


class CountingStore(AsyncStore):
    """An AsyncStore counting the calls that go to its writer thread."""

    calls = 0

    async def call(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return await super().call(func, *args, **kwargs)


async def open_book(tmp_path: Path) -> tuple[Book, CountingStore, Path]:
    path = tmp_path / "baton.db"
    store = CountingStore(Store(path))
    bus = EventBus(store, inline=Store(path, busy_timeout_ms=0, checkpoints=False))
    bus.start()
    return Book(store, bus, "b1"), store, path


async def close(book: Book) -> None:
    await book.bus.close()
    await book.store.close()


def stored(path: Path, task_id: str) -> tuple[Any, ...] | None:
    """The task's row as another process would read it (committed rows only)."""
    conn = sqlite3.connect(str(path))
    try:
        row: tuple[Any, ...] | None = conn.execute(
            "SELECT id, owner FROM tasks WHERE id = ?", (task_id,)
        ).fetchone()
        return row
    finally:
        conn.close()


def new_task(tmp_path: Path) -> Task:
    return Task(id=new_task_id(), instruction="x", root=str(tmp_path))


async def test_the_insert_is_committed_on_the_loop_before_it_returns(tmp_path: Path) -> None:
    book, store, path = await open_book(tmp_path)
    try:
        task = new_task(tmp_path)
        await book.insert(task)
        assert stored(path, task.id) == (task.id, "b1")
        assert store.calls == 0  # no turn of the writer thread
        assert book.tasks[task.id] is task
    finally:
        await close(book)


async def test_a_held_write_lock_sends_the_insert_to_the_writer_which_commits_it_first(
    tmp_path: Path,
) -> None:
    book, store, path = await open_book(tmp_path)
    other = sqlite3.connect(str(path), check_same_thread=False)
    try:
        other.execute("BEGIN IMMEDIATE")  # another broker writing for a while
        task = new_task(tmp_path)
        insert = asyncio.create_task(book.insert(task))
        ticks = 0
        for _ in range(20):  # the loop runs on meanwhile
            await asyncio.sleep(0.01)
            ticks += 1
        assert not insert.done()  # not answered: nothing is committed yet
        assert stored(path, task.id) is None
        other.execute("COMMIT")
        await asyncio.wait_for(insert, 30)
        assert stored(path, task.id) == (task.id, "b1")
        assert store.calls == 1 and ticks == 20
    finally:
        other.close()
        await close(book)


async def test_a_refused_admission_on_the_loop_stores_nothing(tmp_path: Path) -> None:
    book, store, path = await open_book(tmp_path)

    def full(_: Store) -> None:
        raise GroupFull("the group is full")

    try:
        task = new_task(tmp_path)
        with pytest.raises(GroupFull):
            await book.insert(task, admit=full)
        assert stored(path, task.id) is None
        assert task.id not in book.tasks
        assert store.calls == 0
    finally:
        await close(book)


async def test_a_duplicate_is_refused_on_the_loop_as_by_the_writer(tmp_path: Path) -> None:
    book, store, _ = await open_book(tmp_path)
    try:
        task = new_task(tmp_path)
        await book.insert(task)
        with pytest.raises(Exception, match="already exists"):
            await book.insert(task)
        assert store.calls == 0
    finally:
        await close(book)


async def test_a_lock_held_a_moment_is_waited_for_on_the_loop(tmp_path: Path) -> None:
    book, store, path = await open_book(tmp_path)
    other = sqlite3.connect(str(path), check_same_thread=False)
    try:
        other.execute("BEGIN IMMEDIATE")
        loop = asyncio.get_running_loop()
        loop.call_later(0.02, other.commit)
        task = new_task(tmp_path)
        await asyncio.wait_for(book.insert(task), 30)
        assert stored(path, task.id) == (task.id, "b1")
        assert store.calls == 0  # tried again on the loop, not queued behind the writer
    finally:
        other.close()
        await close(book)
