"""Editing a task that has not started: its instruction, title, worker, prerequisites, scope.

A task may be edited while it is ``queued`` and no step of its work has happened (no
attempt, no snapshot: it waits for a slot, its prerequisites or its worker's cool-down), or
when it was ``cancelled`` before it started — then the edit also puts it back in the queue
(with no change, that is just a requeue). Anything else is refused: a task that started
has a snapshot, a checkout and a session made from the old version.

Crash-safe, intent before effect: the turn loop's pending starts of the old version are
voided first (:meth:`baton.runtime.turns.TurnLoop.void`, before anything is awaited, so no
start can slip in between; a timer or a prerequisite that fires during the edit starts
nothing either), then the new version is recorded in one write of the task's row, with a
log event naming what changed; only then is it started (or put to wait) again.
A broker that dies after the record starts the new version when it adopts the task: the
row is all it reads, and the old version is nowhere else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from baton.config.layers import ConfigError
from baton.config.watch import SettingsCache
from baton.core.brief import title_of
from baton.core.lifecycle import TaskState
from baton.core.routing import RoutingError
from baton.core.settle import NextTurn
from baton.core.task import Task
from baton.faults import crash_point
from baton.runtime.book import Book
from baton.runtime.broker import TaskError
from baton.runtime.dispatch import Availability, decide, route_record
from baton.runtime.graph import Dependents
from baton.runtime.recorded import copy, has_snapshot, not_a_proposal, store_profile
from baton.runtime.requests import DelegateRequest
from baton.runtime.turns import TurnLoop
from baton.store import Store, UnknownTask

S = TaskState


@dataclasses.dataclass(frozen=True, slots=True)
class TaskEdit:
    """What an edit changes; ``None`` leaves a field as it is (``[]`` clears a list)."""

    instruction: str | None = None
    title: str | None = None
    worker: str | None = None
    model: str | None = None
    depends_on: Sequence[str] | None = None
    scope: Sequence[str] | None = None

    def changes(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self) if getattr(self, f.name) is not None]


def unstarted(task: Task) -> bool:
    """No step of the task's work has happened: no attempt, no snapshot."""
    return not task.attempts and not has_snapshot(task) and not task.worktree


class Editing:
    def __init__(
        self,
        book: Book,
        settings: SettingsCache,
        availability: Availability,
        loop: TurnLoop,
        dependents: Dependents,
        spawn: Callable[[Any, str], object],
        owned_or_adopt: Callable[[str], Awaitable[Task]],
    ) -> None:
        self.book = book
        self.settings = settings
        self.availability = availability
        self.loop = loop
        self.dependents = dependents
        self.spawn = spawn
        self.owned_or_adopt = owned_or_adopt

    async def edit(self, task_id: str, edit: TaskEdit) -> Task:
        """Change a task that has not started, or requeue (and change) one cancelled before
        it started. Returns the task as it is now."""
        task = await self.owned_or_adopt(task_id)
        not_a_proposal(task, "edit")
        async with self.book.lock(task.id):
            requeue = task.state == S.CANCELLED
            if task.state not in (S.QUEUED, S.CANCELLED) or not unstarted(task):
                raise TaskError(_refusal(task))
            if not requeue and not edit.changes():
                raise TaskError(f"task {task.id}: nothing to change")
            if not requeue:
                self.loop.void(task.id)  # no start of the old version from here on
            rerouted, hold = False, None
            try:
                new, said, rerouted, hold = await self._new_version(task, edit)
                if requeue:
                    _apply(task, new)
                    task.completion, task.message = None, ""
                    await self.book.move(task, S.QUEUED, _reason("requeued", said))
                else:
                    await self.book.save(new)  # the intent: the new version is the record
                    crash_point("edit_recorded")
                    _apply(task, new)
                    await self.book.log(task, _reason("edited by the user", said))
            finally:
                self.loop.edited(task.id)
                if task.state == S.QUEUED:  # the new version (or, refused, the old one)
                    self._start(task, rerouted or requeue, hold)
            return task

    async def _new_version(
        self, task: Task, edit: TaskEdit
    ) -> tuple[Task, list[str], bool, float | None]:
        """The edited task (a copy, ``task`` untouched), what changed in words, whether it
        was routed again, and until when its new worker cools down."""
        new, said, rerouted, hold = copy(task), [], False, None
        if edit.instruction is not None:
            if not edit.instruction.strip():
                raise TaskError("the instruction is empty")
            if task.title == title_of(task.instruction) and edit.title is None:
                new.title = title_of(edit.instruction)
            new.instruction = edit.instruction
            said.append("instruction")
        if edit.title is not None:
            new.title = edit.title
            said.append("title")
        if edit.scope is not None:
            new.scope = [s for s in edit.scope if s.strip()]
            said.append("scope " + (", ".join(new.scope) or "cleared"))
        if edit.worker is not None or edit.model is not None:
            before = task.worker + (f"/{task.model}" if task.model else "")
            hold, rerouted = await self._reroute(new, edit), True
            after = new.worker + (f"/{new.model}" if new.model else "")
            said.append(f"worker {before} → {after}")
        if edit.depends_on is not None:
            deps = await self._prerequisites(task, edit.depends_on)
            if deps:
                new.options["depends_on"] = deps
            else:
                new.options.pop("depends_on", None)
            said.append("after " + (", ".join(deps) or "none"))
        return new, said, rerouted, hold

    async def _reroute(self, new: Task, edit: TaskEdit) -> float | None:
        """The worker (and model) the user names, as delegate would route them; returns
        until when that worker cools down (None: it may start now)."""
        try:
            settings = self.settings.get(new.root)
        except ConfigError as exc:
            raise TaskError(f"Baton's settings: {exc}") from None
        worker = edit.worker or new.worker
        model = edit.model if edit.model is not None else (None if edit.worker else new.model)
        req = DelegateRequest(
            instruction=new.instruction,
            root=new.root,
            kind=new.kind,
            worker=worker,
            model=model or None,
        )
        cooling, evidence = await self.availability()
        try:
            route = decide(settings, req, cooling=cooling, evidence=evidence)
        except RoutingError as exc:
            raise TaskError(str(exc)) from None
        profile = settings.profiles[route.worker]
        new.worker, new.provider, new.model = profile.name, profile.provider, route.model
        new.route_reason = route.reason
        new.options["route"] = route_record(req, route)
        store_profile(new, profile)
        new.options.pop("transport", None)
        return route.hold_until

    async def _prerequisites(self, task: Task, ids: Sequence[str]) -> list[str]:
        """The ids, resolved; refused when one is unknown, is the task, or waits for it."""
        deps: list[str] = []
        for i in ids:
            try:
                deps.append(await self.book.store.call(Store.resolve_id, i.strip()))
            except UnknownTask as exc:
                raise TaskError(str(exc)) from None
        deps = list(dict.fromkeys(deps))
        for dep in deps:
            chain = await self._waits_for(dep, task.id)
            if chain:
                raise TaskError(
                    "the prerequisites make a cycle: " + " → ".join([task.id, *chain, task.id])
                )
        return deps

    async def _waits_for(self, start: str, target: str) -> list[str]:
        """The chain from ``start`` along prerequisites to ``target`` (empty: none)."""
        seen: set[str] = set()
        stack: list[tuple[str, list[str]]] = [(start, [start])]
        while stack:
            tid, path = stack.pop()
            if tid == target:
                return path[:-1]
            if tid in seen:
                continue
            seen.add(tid)
            other = await self.book.get(tid)
            for dep in other.options.get("depends_on") or []:
                stack.append((str(dep), [*path, str(dep)]))
        return []

    def _start(self, task: Task, routed: bool, hold: float | None) -> None:
        """Start the queued task as delegate would: after its prerequisites, after its
        worker's cool-down (``hold``; a timer of the same worker still pending starts the
        new version when it fires, unless the task was ``routed`` again), or now."""
        if routed:
            self.loop.cancel_timer(task.id)
        if task.options.get("depends_on"):
            self.loop.cancel_timer(task.id)
            self.dependents.add(task)
            self.spawn(self.dependents.release(), f"dependents of {task.id}")
            return
        self.dependents.waiting.pop(task.id, None)
        if self.loop.timed(task.id):
            return
        if hold is not None:
            self.loop.start_later(task, hold)
        else:
            self.loop.start(task, NextTurn("", "first"))


def _apply(task: Task, new: Task) -> None:
    """Put the new version's fields on the task this broker holds."""
    for f in ("instruction", "title", "scope", "worker", "provider", "model", "route_reason"):
        setattr(task, f, getattr(new, f))
    task.options = new.options


def _reason(what: str, said: list[str]) -> str:
    return what + (": " + "; ".join(said) if said else "")


def _refusal(task: Task) -> str:
    if task.state == S.CANCELLED:
        return f"task {task.id} was cancelled after it started; retry or handoff it instead"
    if task.state == S.QUEUED:
        return f"task {task.id} has started (it is queued again); cancel it, then delegate anew"
    return (
        f"task {task.id} is {task.state}: only a task that has not started (queued) is "
        "edited; cancel it and delegate again"
    )


__all__ = ["Editing", "TaskEdit", "unstarted"]
