"""``Store.events_of_type``: one type of event of many tasks, in order per task, read in
as many queries as the ids need (SQLite caps a query's parameters)."""

from __future__ import annotations

from pathlib import Path

import pytest

import baton.store.listing as listing
from baton.core.events import Event, EventType
from baton.core.task import Task, new_task_id
from baton.store import Store


def test_the_state_events_of_many_tasks_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listing, "_IDS_PER_QUERY", 2)  # five tasks: three queries
    store = Store(tmp_path / "baton.db")
    try:
        ids = [new_task_id() for _ in range(5)]
        for tid in ids:
            store.insert_task(Task(id=tid, instruction="x", root="/r"))
        batch = []
        for tid in ids:
            batch += [
                Event(EventType.STATE, {"from": "queued", "to": "running"}, task_id=tid),
                Event(EventType.TEXT, {"text": "hi", "delta": True}, task_id=tid),
                Event(EventType.STATE, {"from": "running", "to": "review"}, task_id=tid),
            ]
        store.append_events(batch)
        found = store.events_of_type([*ids[:4], ids[0]], EventType.STATE)  # one repeated
        assert {e.task_id for e in found} == set(ids[:4])
        for tid in ids[:4]:
            mine = [e for e in found if e.task_id == tid]
            assert [(e.seq, e.data["to"]) for e in mine] == [(1, "running"), (3, "review")]
            assert all(e.type == EventType.STATE and e.ts > 0 for e in mine)
        assert store.events_of_type([], EventType.STATE) == []
    finally:
        store.close()
