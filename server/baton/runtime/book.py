"""The book of the tasks a broker owns: the one writer of their transitions.

Every state change of a task goes through :meth:`Book.move`, which checks it against the
lifecycle (:func:`baton.core.lifecycle.transition`), records it with the task's owner, and
then emits its ``state`` event. A record that cannot be written (a full disk) is kept in
memory, shown by :meth:`Book.get`, and written again by :meth:`Book.retry_unsaved`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

import baton.runtime.accounts as accounts
from baton.core.events import Event, EventType
from baton.core.lifecycle import SETTLED, Completion, TaskState, transition
from baton.core.task import Attempt, Task
from baton.runtime.bus import EventBus
from baton.runtime.recorded import copy
from baton.store import AsyncStore, Store

log = logging.getLogger(__name__)

S = TaskState
#: States a broker must keep an eye on (timers, queue, processes).
OWNED = frozenset({S.QUEUED, S.PREPARING, S.RUNNING, S.VERIFYING, S.RATE_LIMITED})
#: States in which the broker stays the task's owner (OWNED, and a question's wait).
KEPT = OWNED | {S.NEEDS_INPUT}


class Book:
    def __init__(self, store: AsyncStore, bus: EventBus, broker: str) -> None:
        self.store = store
        self.bus = bus
        self.broker = broker
        self.tasks: dict[str, Task] = {}  # the tasks this broker owns
        self.cancelling: set[str] = set()  # cancelled between steps; stopped at the next
        self.secrets: dict[str, list[str]] = {}  # task id → secret values its agent got
        self._unsaved: dict[str, tuple[Task, str | None]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def lock(self, task_id: str) -> asyncio.Lock:
        return self._locks.setdefault(task_id, asyncio.Lock())

    async def get(self, task_id: str) -> Task:
        """The task (any unique prefix): as this broker knows it, else as stored."""
        tid: str = await self.store.call(lambda s: s.resolve_id(task_id))
        if tid in self._unsaved:
            return self._unsaved[tid][0]
        return await self.fresh(tid)

    async def fresh(self, task_id: str) -> Task:
        if task_id in self.tasks:
            return self.tasks[task_id]
        task: Task = await self.store.call(lambda s: s.get_task(task_id))
        return task

    async def insert(self, task: Task, admit: Callable[[Store], None] | None = None) -> None:
        """Store a new task (``admit``: run first in the insert's transaction; what it
        raises stores nothing); committed when this returns.

        Committed on the loop through the bus's own connection (:meth:`EventBus.write`:
        one row, a fraction of a millisecond, as event batches are) rather than behind
        the writer thread's queue, which holds event batches and records for tens of
        milliseconds under load.
        """
        snapshot = copy(task)
        await self.bus.write(lambda s: s.insert_task(snapshot, owner=self.broker, admit=admit))
        self.tasks[task.id] = task

    async def own(self, task: Task) -> None:
        self.tasks[task.id] = task
        await self.store.call(lambda s: s.set_owner(task.id, self.broker))

    async def save(self, task: Task) -> None:
        snapshot = copy(task)
        await self.store.call(lambda s: s.save_task(snapshot, owner=self.broker))

    async def record_attempt(self, task: Task, attempt: Attempt) -> None:
        """The attempt and the task, in one transaction."""
        snapshot, row = copy(task), dataclasses.replace(attempt)
        await self.store.call(lambda s: s.record(snapshot, owner=self.broker, attempt=row))

    async def save_attempt(self, attempt: Attempt) -> None:
        row = dataclasses.replace(attempt)
        await self.store.call(lambda s: s.save_attempt(row))

    async def move(
        self,
        task: Task,
        target: TaskState,
        reason: str = "",
        completion: Completion | None = None,
        *,
        hunks: dict[str, Any] | None = None,
    ) -> None:
        """Move ``task`` to ``target`` (refused when the lifecycle forbids it) and say so.

        ``hunks`` (decisions) are stored in the same transaction as the new state.
        """
        before = task.state
        task.state = transition(before, target)
        task.updated_at = time.time()
        if completion is not None:
            task.completion = completion
        if reason and target not in (S.RUNNING, S.PREPARING, S.QUEUED):
            task.message = reason
        settles = target in SETTLED or target == S.REVIEW
        if settles:
            self.cancelling.discard(task.id)
            task.settled_at = task.updated_at
            self.tasks.pop(task.id, None)
        else:
            task.settled_at = None
        if target not in SETTLED:
            task.archived_at = None  # back to work (or to review): listed again
        owner = self.broker if target in KEPT else None
        snapshot = copy(task)
        try:
            await self.store.call(lambda s: s.record(snapshot, owner=owner, hunks=hunks))
            self._unsaved.pop(task.id, None)
        except Exception as exc:
            if hunks:  # decisions not stored: the caller must not go on as if they were
                task.state = before
                raise
            log.error("task %s: could not record %s → %s: %s", task.id, before, target, exc)
            self._unsaved[task.id] = (snapshot, owner)
        if target in KEPT:
            self.tasks[task.id] = task
        data: dict[str, Any] = {"from": str(before), "to": str(target), "reason": reason}
        if completion is not None:
            data["completion"] = str(completion)
        if target == S.RATE_LIMITED:
            data["resets_at"] = task.resets_at
        try:
            await self.bus.emit([Event(EventType.STATE, data, task_id=task.id)])
        except Exception as exc:
            log.error("task %s: could not record %s → %s: %s", task.id, before, target, exc)
        if settles:
            self.secrets.pop(task.id, None)
            try:
                await self.store.call(accounts.record_outcome, snapshot)
            except Exception as exc:
                log.warning("task %s: could not record its outcome in the ledger: %s", task.id, exc)

    async def retry_unsaved(self) -> None:
        """Write again the task records a full disk refused (called by the broker's tick)."""
        for task_id, (task, owner) in list(self._unsaved.items()):
            try:
                await self.store.call(_save_task, task, owner)
            except Exception:
                return
            if self._unsaved.get(task_id, (None, None))[0] is task:
                del self._unsaved[task_id]

    async def emit(self, task: Task, type: EventType, data: dict[str, Any]) -> None:
        await self.bus.emit([Event(type, data, task_id=task.id, attempt=task.attempts)])

    async def log(self, task: Task, message: str, level: str = "info") -> None:
        with contextlib.suppress(Exception):
            await self.bus.emit(
                [Event(EventType.LOG, {"level": level, "message": message}, task_id=task.id)]
            )

    async def release_all(self) -> None:
        """This broker stops: its tasks have no owner until the next one adopts them."""
        for task_id in list(self.tasks):
            with contextlib.suppress(Exception):
                await self.store.call(Store.set_owner, task_id, None)


def state_event(task_id: str, before: TaskState | None, after: TaskState, reason: str) -> Event:
    return Event(
        EventType.STATE,
        {"from": str(before) if before else None, "to": str(after), "reason": reason},
        task_id=task_id,
    )


def _save_task(store: Store, task: Task, owner: str | None) -> None:
    store.save_task(task, owner=owner)


def count_by_state(store: Store, roots: list[str], failed_since: float | None) -> dict[str, int]:
    """Tasks per state over ``roots`` (all when none); ``failed`` since a time if given."""
    totals: dict[str, int] = {}
    targets: list[str | None] = list(roots) if roots else [None]
    for root in targets:
        for state, n in store.count_by_state(root).items():
            totals[state] = totals.get(state, 0) + n
    if failed_since is not None:
        totals["failed"] = sum(
            len(store.list_tasks(states=["failed"], root=r, since=failed_since, limit=None))
            for r in targets
        )
    return totals
