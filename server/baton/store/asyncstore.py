"""The store used from asyncio: every call runs on one worker thread, in order."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from baton.core.diff import FileDiff
from baton.core.events import Event
from baton.core.task import Attempt, Task
from baton.store.layout import KEEP, Keep
from baton.store.store import Store

P = ParamSpec("P")
R = TypeVar("R")


class AsyncStore:
    """A :class:`Store` used from asyncio: every call runs on one worker thread, in order."""

    def __init__(self, store: Store, executor: ThreadPoolExecutor | None = None) -> None:
        self.store = store
        self._executor = executor or ThreadPoolExecutor(1, thread_name_prefix="baton-store")

    @classmethod
    async def open(cls, path: Path | str) -> AsyncStore:
        """Open (and migrate) the database on the worker thread."""
        executor = ThreadPoolExecutor(1, thread_name_prefix="baton-store")
        try:
            store = await asyncio.get_running_loop().run_in_executor(executor, Store, path)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(store, executor)

    async def call(
        self, func: Callable[Concatenate[Store, P], R], *args: P.args, **kwargs: P.kwargs
    ) -> R:
        """Run ``func(store, *args, **kwargs)`` on the store's thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor, functools.partial(func, self.store, *args, **kwargs)
        )

    async def run(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Run the Store method called ``name`` on the store's thread (untyped; prefer twins)."""
        method = getattr(Store, name)
        return await self.call(method, *args, **kwargs)

    async def append_events(
        self, events: Sequence[Event], *, offsets: Sequence[tuple[str, int, int]] = ()
    ) -> list[Event]:
        return await self.call(Store.append_events, events, offsets=offsets)

    async def events(
        self, task_id: str, after_seq: int = 0, limit: int | None = None
    ) -> list[Event]:
        return await self.call(Store.events, task_id, after_seq, limit)

    async def insert_task(self, task: Task, *, owner: str | None = None) -> None:
        await self.call(Store.insert_task, task, owner=owner)

    async def save_task(self, task: Task, *, owner: str | Keep | None = KEEP) -> None:
        await self.call(Store.save_task, task, owner=owner)

    async def get_task(self, task_id: str) -> Task:
        return await self.call(Store.get_task, task_id)

    async def find_task(self, task_id: str) -> Task | None:
        return await self.call(Store.find_task, task_id)

    async def save_attempt(self, attempt: Attempt) -> None:
        await self.call(Store.save_attempt, attempt)

    async def save_diff(self, task_id: str, files: Sequence[FileDiff], final: bool) -> None:
        await self.call(Store.save_diff, task_id, files, final)

    async def close(self) -> None:
        """Finish the pending work, close the database and stop the worker thread."""
        try:
            await self.call(Store.close)
        finally:
            self._executor.shutdown(wait=True)
