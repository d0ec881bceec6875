"""Waking the moment a process ends, instead of at the next poll.

A broker following an attempt looks for its exit record every ``poll`` seconds; alone, that
adds half a poll on average between the agent's end and its review. :class:`ExitWatch`
holds a pidfd (Linux ≥ 5.3) of the wrapper, which becomes readable when the process ends
(a zombie counts), so a waiter sleeping at most ``poll`` seconds wakes at once. It works for
a wrapper another broker started as well. Where no pidfd can be had (another system, an old
kernel, a process already gone) it only sleeps: the poll still finds every end.
"""

from __future__ import annotations

import asyncio
import contextlib
import os

from baton.process.spawn import is_alive


class ExitWatch:
    """Sleeps until process ``pid`` (the one created at ``create_time``) ends, or a timeout."""

    def __init__(self, pid: int, create_time: float | None = None) -> None:
        self._fd: int | None = None
        self._ended = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        open_pidfd = getattr(os, "pidfd_open", None)
        if pid <= 0 or open_pidfd is None:
            return
        try:
            fd = int(open_pidfd(pid))
        except OSError:
            return
        # Opened first, checked after: a pidfd of a reused pid is not the process we follow.
        if not is_alive(pid, create_time):
            os.close(fd)
            return
        self._fd = fd
        self._loop.add_reader(fd, self._on_end)

    @property
    def watching(self) -> bool:
        """Whether an end wakes the waiter (a pidfd is held)."""
        return self._fd is not None

    def _on_end(self) -> None:
        self._ended.set()
        if self._fd is not None:
            self._loop.remove_reader(self._fd)

    async def wait(self, timeout: float) -> None:
        """Return when the process has ended (the first time after it did), else after
        ``timeout`` seconds."""
        if self._fd is None or self._ended.is_set():
            await asyncio.sleep(timeout)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ended.wait(), timeout)
        if self._ended.is_set():
            self.close()  # the next wait sleeps: the end has been told once

    def close(self) -> None:
        if self._fd is not None:
            if not self._ended.is_set():
                self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = None
