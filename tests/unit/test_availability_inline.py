"""Routing's availability read at delegate time: with the ledger read fresh, the cool-downs
come through the loop's own connection, not a turn of the store's writer thread there and
back (two thread hops on every delegate → id; issue 18)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import baton.runtime.accounts as accounts
from baton.runtime.dispatch import Availability
from baton.store import AsyncStore, Store


class CountingStore(AsyncStore):
    """An AsyncStore counting the calls that go to its writer thread."""

    calls = 0

    async def call(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return await super().call(func, *args, **kwargs)


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
