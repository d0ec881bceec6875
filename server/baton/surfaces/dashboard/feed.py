"""The dashboard's data, read from the Supervisor: the snapshot, a task's detail, the CSV.

Each reader asks the runtime's face (tasks listed by the store's listing, their ``state``
events in one query, a task's events and the websocket's own ``diff`` answer) and hands the
shaping to :mod:`baton.surfaces.dashboard.views`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import baton.surfaces.dashboard.views as views
from baton import __version__
from baton.core.events import Event
from baton.core.lifecycle import SETTLED, TaskState
from baton.core.task import Task
from baton.errors import NotFound
from baton.runtime import Supervisor

#: The most tasks a snapshot holds (newest first).
MAX_TASKS = 1000
_UNSETTLED = [str(s) for s in TaskState if s not in SETTLED]

#: The broker's websocket methods, by name (``Methods.call``).
Call = Callable[[str, dict[str, Any]], Awaitable[Any]]


class Feed:
    """Reads what the page shows."""

    def __init__(self, sup: Supervisor, call: Call) -> None:
        self.sup = sup
        self.call = call

    async def window_tasks(self, window: str, now: float) -> list[Task]:
        """The tasks created in the window, and every task not yet settled; newest first."""
        since = now - views.WINDOWS[window]
        recent = await self.sup.list_tasks(since=since, limit=MAX_TASKS, archived=None)
        unsettled = await self.sup.list_tasks(states=_UNSETTLED, limit=MAX_TASKS, archived=None)
        by_id = {t.id: t for t in [*unsettled, *recent]}
        ordered = sorted(by_id.values(), key=lambda t: t.created_at, reverse=True)
        return ordered[:MAX_TASKS]

    async def rows(self, tasks: Sequence[Task], now: float | None = None) -> list[dict[str, Any]]:
        """Each task's row, its timeline from its ``state`` events."""
        by_task: dict[str, list[Event]] = {}
        for e in await self.sup.state_events([t.id for t in tasks]):
            by_task.setdefault(e.task_id, []).append(e)
        return [views.task_row(t, by_task.get(t.id, []), now) for t in tasks]

    async def rows_of(self, task_ids: Sequence[str]) -> list[dict[str, Any]]:
        """The rows of these tasks as they are now (for the live ``tasks`` messages)."""
        tasks = [await self.sup.get(i) for i in task_ids]
        return await self.rows(tasks)

    async def task_and_events(self, task_id: str) -> tuple[Task, list[Event]]:
        """A task (by its full id) and its stored events, for a followed transcript."""
        task = await self.sup.get(task_id)
        if task.id != task_id:
            raise NotFound(f"no task {task_id} (a full id is needed)")
        events = await self.sup.events(task.id)
        return await self.sup.get(task.id), events

    async def snapshot(self, window: str, csrf: str, actions: bool) -> dict[str, Any]:
        now = time.time()
        tasks = await self.window_tasks(window, now)
        since = now - views.WINDOWS[window]
        return {
            "now": now,
            "window": window,
            "since": since,
            "csrf": csrf,
            "actions": actions,
            "version": __version__,
            "tasks": await self.rows(tasks, now),
            "workers": views.worker_rows(tasks, since, now),
            "totals": views.totals(tasks),
        }

    async def detail(self, task_id: str) -> dict[str, Any]:
        """One task in full (raises ``NotFound`` for an unknown id)."""
        task = await self.sup.get(task_id)
        events = await self.sup.events(task.id)
        diff = await self.call("diff", {"id": task.id})
        diff.pop("task", None)
        return views.detail(await self.sup.get(task.id), events, diff)

    async def csv(self, window: str) -> str:
        now = time.time()
        return views.csv_text(await self.rows(await self.window_tasks(window, now), now))
