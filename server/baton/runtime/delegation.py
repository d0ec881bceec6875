"""Delegation: a request becomes a recorded task, its route decided once.

:meth:`Delegation.delegate` reads the project's settings, decides the route (worker,
model, why — :func:`baton.runtime.dispatch.decide`) and stores it on the task with what
its brief and snapshot will need (diagnostics, overlays, rules), so nothing is decided
again when a broker adopts it. The task is durable before its first event; then it
starts, waits for its prerequisites (:class:`~baton.runtime.graph.Dependents`), or waits
for its worker's cool-down. A graph of tasks and a comparison of workers are delegations
too: each node or worker is one task.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from baton.agents import effort
from baton.config.layers import ConfigError
from baton.config.profiles import Profile
from baton.config.settings import Settings
from baton.config.watch import SettingsCache
from baton.core.events import Event
from baton.core.lifecycle import TaskState
from baton.core.routing import Route, RoutingError
from baton.core.settle import NextTurn
from baton.core.task import Task, new_task_id
from baton.runtime.book import Book, state_event
from baton.runtime.broker import TaskError
from baton.runtime.dispatch import Availability, decide
from baton.runtime.graph import Dependents, in_order
from baton.runtime.groups import GroupFull, admission, live_per_group
from baton.runtime.recorded import store_request, task_for
from baton.runtime.requests import DelegateRequest, GraphNode
from baton.runtime.turns import TurnLoop
from baton.store import Store
from baton.store.paths import task_dir

log = logging.getLogger(__name__)
#: Routings of one request when other brokers keep taking its group's place meanwhile.
ADMIT_TRIES = 3
S = TaskState


class Delegation:
    def __init__(
        self,
        home: Path,
        book: Book,
        settings: SettingsCache,
        availability: Availability,
        loop: TurnLoop,
        dependents: Dependents,
        spawn: Callable[[Any, str], object],
        profile: Callable[[str, str | None], Profile],
    ) -> None:
        self.home = home
        self.book = book
        self.settings = settings
        self.availability = availability  # which workers cool down, and the evidence
        self.loop = loop
        self.dependents = dependents
        self.spawn = spawn
        self.profile = profile  # a worker's profile in a project's settings
        self._admitting = asyncio.Lock()

    async def delegate(self, req: DelegateRequest) -> Task:
        """Record the task and return it at once; the work starts in the background."""
        root = str(Path(req.root).resolve())
        try:
            settings = self.settings.get(root)
        except ConfigError as exc:
            raise TaskError(f"Baton's settings: {exc}") from None
        # With groups of accounts, live counts and the insert go together: two requests
        # at once never both take a group's last place (in this broker, the lock; across
        # brokers, the insert checks the place again in its own write transaction).
        async with self._admitting if settings.groups else contextlib.nullcontext():
            task, route = await self._admit(req, settings)
        waits = " after " + ", ".join(task.options["depends_on"]) if req.depends_on else ""
        # The task is durable now; its first event is committed with the next batch.
        first = self.book.bus.emit_nowait(
            [state_event(task.id, None, S.QUEUED, "delegated" + waits)]
        )
        first.add_done_callback(_log_if_failed)
        note = effort.ignored(task.provider, task.options.get("effort"))
        if note:
            await self.book.log(task, note)
        if req.depends_on:
            self.dependents.add(task)
            self.spawn(self.dependents.release(), f"dependents of {task.id}")
        elif route.hold_until is not None:
            await self.book.log(task, f"waiting: {route.reason}")
            self.loop.start_later(task, route.hold_until)
        else:
            self.loop.start(task, NextTurn("", "first"))
        return task

    async def _admit(self, req: DelegateRequest, settings: Settings) -> tuple[Task, Route]:
        """Route ``req`` and store its task; routed again (a bounded number of times) when
        another broker took the group's place in between."""
        for tries_left in reversed(range(ADMIT_TRIES)):
            cooling, evidence = await self.availability()
            live = await live_per_group(self.book, settings)
            try:
                route = decide(settings, req, cooling=cooling, evidence=evidence, live=live)
            except RoutingError as exc:
                raise TaskError(str(exc)) from None
            task = task_for(req, settings, route)
            if req.depends_on:
                task.options["depends_on"] = [
                    await self.book.store.call(Store.resolve_id, i) for i in req.depends_on
                ]
            folder = task_dir(self.home, task.id)
            keep = functools.partial(
                store_request,
                task,
                folder,
                diagnostics=req.diagnostics,
                overlays=req.overlays,
                rules=req.rules,
            )
            if req.overlays:  # unsaved buffers go to a file; the rest is only options
                await asyncio.to_thread(keep)
            else:
                keep()
            try:
                await self.book.insert(task, admit=admission(settings, task))
            except GroupFull as exc:
                await asyncio.to_thread(shutil.rmtree, folder, True)
                if not tries_left:
                    raise TaskError(f"{task.worker}: {exc}") from None
                continue
            return task, route
        raise AssertionError("unreachable")

    async def delegate_graph(self, nodes: Sequence[GraphNode]) -> dict[str, Task]:
        """Delegate a small graph in one call: each node starts once the nodes it comes
        ``after`` are accepted. Returns key → task. Cycles and unknown keys are refused."""
        created: dict[str, Task] = {}
        for n in in_order(nodes):
            deps = [created[k].id for k in n.after]
            created[n.key] = await self.delegate(dataclasses.replace(n.request, depends_on=deps))
        return created

    async def compare(self, req: DelegateRequest, workers: Sequence[str]) -> list[Task]:
        """One brief to several workers at once (a group); accepting one rejects the rest."""
        if len(workers) < 2:
            raise TaskError("compare needs at least two workers")
        for w in workers:
            self.profile(w, req.root)
        group = "g" + new_task_id()
        options = {**req.options, "compare": True}
        return [
            await self.delegate(dataclasses.replace(req, worker=w, group=group, options=options))
            for w in workers
        ]


def _log_if_failed(fut: asyncio.Future[list[Event]]) -> None:
    if not fut.cancelled() and fut.exception() is not None:
        log.error("could not record an event: %s", fut.exception())
