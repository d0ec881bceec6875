"""Watching the worktrees of running tasks, so the draft ``baton/diff`` follows every change.

Agents report most edits as tool events (the broker drafts a diff on those), but a shell
command can change files silently. A watcher per running task (``watchfiles``, which waits
in its own thread) asks the broker for a fresh draft whenever the worktree changes; the
broker debounces and computes it on a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

import watchfiles

log = logging.getLogger(__name__)


class Watchers:
    """One watcher per task, started and stopped as tasks start and stop running."""

    def __init__(self, on_change: Callable[[str], object], debounce_ms: int = 200) -> None:
        self._on_change = on_change
        self._debounce = debounce_ms
        self._tasks: dict[str, tuple[asyncio.Task[None], asyncio.Event]] = {}

    def watching(self, task_id: str) -> bool:
        return task_id in self._tasks

    def start(self, task_id: str, folder: Path) -> None:
        if task_id in self._tasks:
            return
        stop = asyncio.Event()
        task = asyncio.get_running_loop().create_task(
            self._watch(task_id, folder, stop), name=f"watch {task_id}"
        )
        self._tasks[task_id] = (task, stop)
        task.add_done_callback(lambda _: self._tasks.pop(task_id, None))

    async def _watch(self, task_id: str, folder: Path, stop: asyncio.Event) -> None:
        try:
            async for _changes in watchfiles.awatch(
                folder, stop_event=stop, debounce=self._debounce, recursive=True
            ):
                self._on_change(task_id)
        except (FileNotFoundError, RuntimeError) as exc:  # the worktree went away
            log.info("stopped watching %s: %s", task_id, exc)

    def stop(self, task_id: str) -> None:
        entry = self._tasks.get(task_id)
        if entry is not None:
            entry[1].set()

    def close(self) -> None:
        for task, stop in list(self._tasks.values()):
            stop.set()
            task.cancel()
