"""Routing's availability read at delegate time: with the ledger read fresh, the cool-downs
come through the loop's own connection, not a turn of the store's writer thread there and
back (two thread hops on every delegate → id; issue 18)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import baton.runtime.accounts as accounts
from baton.runtime.dispatch import Availability
from baton.store import Store
from tests.integration.test_book_insert import CountingStore


async def test_cool_downs_are_read_on_the_loop_while_the_ledger_is_fresh(tmp_path: Path) -> None:
    path = tmp_path / "baton.db"
    store = CountingStore(Store(path))
    inline = Store(path, busy_timeout_ms=0, checkpoints=False)
    try:
        availability = Availability(store, lambda: inline)
        assert await availability() == ({}, {})
        assert store.calls == 1  # the first read: the ledger, with the cool-downs
        until = time.time() + 600
        await store.call(accounts.record_cooldown, "fake", "fake", until, "rate limited")
        calls = store.calls
        cooling, _ = await availability()
        assert cooling == {"fake": until}  # seen at once: it is read every time
        assert store.calls == calls  # and not through the writer thread
    finally:
        inline.close()
        await store.close()


async def test_without_a_loop_connection_both_go_to_the_writer(tmp_path: Path) -> None:
    store = CountingStore(Store(tmp_path / "baton.db"))
    try:
        availability = Availability(store)
        await availability()
        await availability()
        assert store.calls == 2
    finally:
        await store.close()


async def test_a_stale_ledger_is_used_once_more_while_the_writer_reads_it_again(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Past the TTL, routing does not wait for the writer thread to read the ledger: the
    last read answers, a fresh one is read in the background, and the next routing has it."""
    import asyncio

    import baton.runtime.dispatch as dispatch
    from baton.core.lifecycle import TaskState
    from baton.core.task import Task

    path = tmp_path / "baton.db"
    store = CountingStore(Store(path))
    inline = Store(path, busy_timeout_ms=0, checkpoints=False)
    try:
        availability = Availability(store, lambda: inline)
        assert await availability() == ({}, {})
        task = Task("t1", "do it", str(tmp_path), state=TaskState.ANSWERED, kind="general")
        await store.call(lambda s: s.insert_task(task))
        await store.call(accounts.record_outcome, task)
        monkeypatch.setattr(dispatch, "EVIDENCE_TTL", 0.0)
        calls = store.calls
        cooling, evidence = await availability()
        assert (cooling, evidence) == ({}, {})  # the last read, at once
        assert availability._refresh is not None  # the re-read, started in the background
        for _ in range(200):  # until it is back (generous: a loaded machine)
            if availability._refresh is not None and availability._refresh.done():
                break
            await asyncio.sleep(0.01)
        monkeypatch.setattr(dispatch, "EVIDENCE_TTL", 3600.0)
        assert store.calls == calls + 1  # the re-read, on the writer thread
        _, evidence = await availability()
        assert evidence[("fake", None, "general")].tasks == 1
        assert store.calls == calls + 1  # read on the loop's connection, the ledger fresh
    finally:
        inline.close()
        await store.close()
