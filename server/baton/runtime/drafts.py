"""The task's diff against its snapshot: drafts while the agent works, the final one after.

A draft is recomputed (debounced) when the agent says it touched files or a file watcher
saw its worktree change; the final diff is computed once the attempt has ended. One diff at
a time per task, and no draft once the attempt has ended, so a late draft never overwrites
the final diff. A diff is stored with the task's secret values masked (a hunk whose new text
held one is flagged, see :func:`baton.core.diff.mask_diff`): the ``diffs`` table never holds
a value.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from baton.core.diff import FileDiff, count_lines, mask_diff, with_states
from baton.core.events import EventType
from baton.core.lifecycle import TaskState
from baton.core.task import Task
from baton.runtime.book import Book
from baton.runtime.recorded import snapshot_of
from baton.runtime.redo import forget_redone_ids, keep_redone_ids
from baton.store import Store
from baton.workspace import compute_diff
from baton.workspace.git import in_background

S = TaskState


class Drafts:
    def __init__(
        self,
        book: Book,
        debounce: float,
        attempt_running: Callable[[str], bool],
        spawn: Callable[[Any, str], object],
        secrets: Callable[[Task], Awaitable[list[str]]] | None = None,
    ) -> None:
        self.book = book
        self.debounce = debounce
        self.attempt_running = attempt_running  # task id → an attempt of it is being followed
        self._spawn = spawn
        self.secrets = secrets  # the values to mask in the task's diff
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def request(self, task_id: str) -> bool:
        """Recompute a running task's draft soon; False when this broker runs no task
        ``task_id`` (a file watcher's guess)."""
        task = self.book.tasks.get(task_id)
        if task is None or task.state != S.RUNNING:
            return False
        self.schedule(task)
        return True

    def schedule(self, task: Task) -> None:
        """Recompute the task's draft diff soon (debounced)."""
        if task.id in self._timers or not task.worktree:
            return
        loop = asyncio.get_running_loop()

        def fire() -> None:
            self._timers.pop(task.id, None)
            if task.state == S.RUNNING:
                self._spawn(self.compute(task, final=False), f"draft {task.id}")

        self._timers[task.id] = loop.call_later(self.debounce, fire)

    async def compute(self, task: Task, *, final: bool) -> list[FileDiff]:
        async with self._locks.setdefault(task.id, asyncio.Lock()):
            if not final and (task.state != S.RUNNING or not self.attempt_running(task.id)):
                return []
            if not task.worktree or not Path(task.worktree).exists():
                return []
            snap = snapshot_of(task)
            files = await asyncio.to_thread(in_background, compute_diff, snap, Path(task.worktree))
            if task.options.get("redone"):  # a redone hunk keeps the id of the one it redoes
                files = await asyncio.to_thread(in_background, keep_redone_ids, task, files)
                if final:
                    forget_redone_ids(task)
            return await self.record(task, files, final=final)

    async def final_if_changed(self, task: Task) -> list[FileDiff]:
        """The final diff of a task whose attempt has ended, recorded only when its checkout
        holds changes (else nothing is written and the answer is empty)."""
        async with self._locks.setdefault(task.id, asyncio.Lock()):
            if not task.worktree or not Path(task.worktree).exists():
                return []
            snap = snapshot_of(task)
            files = await asyncio.to_thread(in_background, compute_diff, snap, Path(task.worktree))
            return await self.record(task, files, final=True) if files else []

    async def record(self, task: Task, files: list[FileDiff], *, final: bool) -> list[FileDiff]:
        """Store the task's diff, masked, and say so with a ``diff`` event (its size); the
        diff as stored."""
        values = await self.secrets(task) if self.secrets is not None else []
        if values:
            files = await asyncio.to_thread(mask_diff, files, values)
        await self.book.store.call(lambda s: s.save_diff(task.id, files, final))
        added, removed = count_lines(h for f in files for h in f.hunks)
        hunks = sum(len(f.hunks) for f in files)
        await self.book.emit(
            task,
            EventType.DIFF,
            {"final": final, "files": len(files), "hunks": hunks, "added": added,
             "removed": removed},
        )  # fmt: skip
        return files

    async def load(self, task_id: str) -> tuple[list[FileDiff], bool]:
        """The latest diff (draft or final) with each hunk's decision."""

        def load(s: Store) -> tuple[list[FileDiff], bool]:
            found = s.load_diff(task_id)
            if found is None:
                return [], False
            files, final = found
            return with_states(files, s.hunk_states(task_id)), final

        result: tuple[list[FileDiff], bool] = await self.book.store.call(load)
        return result

    def close(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
