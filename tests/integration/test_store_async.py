"""AsyncStore: the Store called from asyncio through one worker thread."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from baton.core.events import Event, EventType
from baton.core.task import Task, new_task_id
from baton.store import AsyncStore, Store, UnknownTask


async def test_twins_call_and_run_use_one_thread_in_order(tmp_path: Path) -> None:
    astore = await AsyncStore.open(tmp_path / "baton.db")
    task = Task(id=new_task_id(), instruction="x", root="/r", title="hello world")
    await astore.insert_task(task)
    batches = [
        [Event(EventType.TEXT, {"text": f"{b}.{i}"}, task_id=task.id) for i in range(10)]
        for b in range(20)
    ]
    # Submitted together, they run one after another in submission order.
    results = await asyncio.gather(*(astore.append_events(b) for b in batches))
    seqs = [e.seq for batch in results for e in batch]
    assert seqs == list(range(1, 201))
    stored = await astore.events(task.id, after_seq=195)
    assert [e.data["text"] for e in stored] == [f"19.{i}" for i in range(5, 10)]

    threads = {await astore.call(lambda s: threading.get_ident()) for _ in range(5)}
    assert len(threads) == 1 and threading.get_ident() not in threads

    assert (await astore.get_task(task.id)).title == "hello world"
    assert await astore.run("last_seq", task.id) == 200
    assert [t.id for t in await astore.call(Store.list_tasks, query="hello")] == [task.id]
    with pytest.raises(UnknownTask):
        await astore.get_task("missing")
    await astore.close()


async def test_close_waits_for_pending_work(tmp_path: Path) -> None:
    path = tmp_path / "baton.db"
    astore = AsyncStore(Store(path))
    task = Task(id=new_task_id(), instruction="x", root="/r")
    await astore.insert_task(task)
    pending = asyncio.ensure_future(
        astore.append_events([Event(EventType.LOG, {"n": i}, task_id=task.id) for i in range(500)])
    )
    await asyncio.sleep(0)  # let the append be submitted before close
    await astore.close()
    assert len(await pending) == 500
    with Store(path) as again:
        assert again.last_seq(task.id) == 500
    with pytest.raises(RuntimeError):
        await astore.find_task(task.id)
