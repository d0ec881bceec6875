"""A worker's places: at most its profile's ``concurrency`` tasks at once, across every
broker of one state home.

Inside a broker an :class:`asyncio.Semaphore` queues the tasks; each task that gets past it
also takes one of the worker's place files, ``$BATON_HOME/slots/<worker>.<n>.lock`` for
``n`` below the cap, with ``flock`` — so two brokers (an editor's language server and a
``baton serve``, say) share the cap instead of each allowing it. A broker that dies lets
go of its places with its descriptors; a task waiting for another broker's place looks
again every so often (:data:`POLL_MAX` at the longest).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

#: Seconds between two looks for a place another broker holds, at the longest.
POLL_MAX = 1.0
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


class Slots:
    """The places of one worker, ``cap`` of them."""

    def __init__(self, home: Path, worker: str, cap: int) -> None:
        self.cap = max(1, cap)
        self._local = asyncio.Semaphore(self.cap)
        self._folder = home / "slots"
        self._stem = _UNSAFE.sub("_", worker) or "_"
        self._made = False

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        """Hold one place (waiting for one, in this broker or another, as long as it takes)."""
        async with self._local:
            fd = await self._take()
            try:
                yield
            finally:
                os.close(fd)  # the lock goes with it

    async def _take(self) -> int:
        delay = 0.02
        while True:
            fd = self._try()  # an open and a flock that never waits: on the loop
            if fd is not None:
                return fd
            await asyncio.sleep(delay)
            delay = min(delay * 2, POLL_MAX)

    def _try(self) -> int | None:
        if not self._made:
            self._folder.mkdir(parents=True, exist_ok=True)
            self._made = True
        for n in range(self.cap):
            path = self._folder / f"{self._stem}.{n}.lock"
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return fd
        return None
