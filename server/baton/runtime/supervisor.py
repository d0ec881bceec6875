"""The supervisor: the face the surfaces use to own tasks from delegate to settle.

``delegate`` records the task — its route and worker decided once, with what its brief and
snapshot will need — and returns at once; the turn loop (:mod:`baton.runtime.turns`) does
the work in the background, one attempt at a time. Agents run detached, so closing the
broker never kills work: the next broker adopts it (:mod:`baton.runtime.adoption`).
This module wires the parts together and checks requests; it holds no task logic itself:

- :mod:`~baton.runtime.book` — the tasks this broker owns, the one writer of transitions;
- :mod:`~baton.runtime.prepare` — snapshot, worktree, brief, clean-up (safe to repeat);
- :mod:`~baton.runtime.attempts` — one attempt: recorded, started, followed;
- :mod:`~baton.runtime.turns` — the turn loop, slots, rate limits, hand-offs;
- :mod:`~baton.runtime.verify` — checks and the independent review;
- :mod:`~baton.runtime.drafts` — the diff, draft and final;
- :mod:`~baton.runtime.decisions` — accept and reject, through a journal (and the
  reopen and reaccept of an editor's undo and redo, :mod:`~baton.runtime.reopen`);
- :mod:`~baton.runtime.proposals` — edits other tools propose;
- :mod:`~baton.runtime.adoption` — taking over from a broker that is gone;
- :mod:`~baton.runtime.graph` — tasks that wait for others.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import os
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

import baton.runtime.routing as routes
from baton.acp import transport as acp
from baton.config.layers import ConfigError
from baton.config.profiles import Profile, default_profiles
from baton.config.settings import Settings
from baton.config.watch import SettingsCache
from baton.core.diff import FileDiff
from baton.core.events import Event
from baton.core.lifecycle import Completion, TaskState
from baton.core.revision import Comment
from baton.core.routing import RoutingError
from baton.core.settle import NextTurn, Stop
from baton.core.task import Attempt, Task, new_task_id
from baton.process import spawn as procs
from baton.runtime.adoption import Adoption
from baton.runtime.attempts import Attempts
from baton.runtime.book import OWNED, Book, count_by_state, state_event
from baton.runtime.broker import Limits, TaskError, broker_alive, broker_id
from baton.runtime.bus import BatchListener, EventBus, Listener, Subscription
from baton.runtime.decisions import Decisions
from baton.runtime.drafts import Drafts
from baton.runtime.graph import Dependents, close_group, in_order
from baton.runtime.prepare import Preparer
from baton.runtime.proposals import ProposalDesk
from baton.runtime.recorded import (
    configured_profile,
    not_a_proposal,
    store_request,
    task_for,
)
from baton.runtime.redo import redo_turn
from baton.runtime.reopen import Redecided
from baton.runtime.requests import DelegateRequest, GraphNode
from baton.runtime.revision import Revisions
from baton.runtime.turns import TurnLoop
from baton.runtime.verify import Verifier
from baton.store import AsyncStore, Store, UnknownTask
from baton.store.paths import task_dir
from baton.workspace import AcceptResult

log = logging.getLogger(__name__)

S = TaskState


class Supervisor:
    def __init__(
        self,
        home: Path,
        *,
        profiles: Mapping[str, Profile] | None = None,
        default_worker: str = "fake",
        limits: Limits | None = None,
        adopt: bool = True,
        settings: SettingsCache | None = None,
    ) -> None:
        self.home = home
        self.profiles: dict[str, Profile] = dict(profiles or default_profiles())
        self.default_worker = default_worker
        # Each project's settings (profiles, routing, rules), read at delegate time; the
        # profiles above are their defaults layer.
        self.settings = settings or SettingsCache(
            profiles=self.profiles, default_worker=default_worker
        )
        self.limits = limits or Limits()
        self.id = broker_id()
        self._adopt = adopt
        self.store = AsyncStore(Store(home / "baton.db"))
        self.bus = EventBus(self.store)
        self._background: set[asyncio.Task[Any]] = set()
        self._availability = routes.Availability(self.store)
        self._closed = False
        book = self.book = Book(self.store, self.bus, self.id)
        self._attempts = Attempts(home, book, self.settings, self.limits, self._draft_soon)
        self._drafts = Drafts(
            book, self.limits.draft_debounce, self._following, self._spawn, self._secrets_of
        )
        self._preparer = Preparer(home, book, self.settings)
        verifier = Verifier(
            home, book, self._attempts, self._drafts, self._profile, self._secrets_of
        )
        self._loop = TurnLoop(
            book,
            self._preparer,
            self._attempts,
            self._drafts,
            verifier,
            self.settings,
            self.profiles_for,
            self._spawn,
            self._availability,
        )
        self._desk = ProposalDesk(home, book, self._drafts)
        self._dependents = Dependents(book, lambda t: self._loop.start(t, NextTurn("", "first")))
        self._decisions = Decisions(
            home,
            book,
            self._drafts,
            self._preparer,
            self._desk,
            self._after_decided,
            self._secrets_of,
        )
        self._revisions = Revisions(book, self._drafts, self.reply)
        self._adoption = Adoption(
            home,
            book,
            self._attempts,
            self._loop,
            self._desk,
            self.settings,
            self.limits,
            self._dependents.add,
        )

    # ------------------------------------------------------------------ lifecycle of the broker

    async def start(self) -> None:
        # Worker threads (store writes, git, diffs; pygls' stdin reader in the language
        # server) share the GIL with the event loop: a short switch interval keeps a busy
        # one from holding the loop, and event delivery, up for the default 5 ms.
        sys.setswitchinterval(0.001)
        path = self.store.store.path
        self.bus.inline = await asyncio.to_thread(Store, path, busy_timeout_ms=0, checkpoints=False)
        self.bus.start()
        self.settings.start()
        await self.store.call(lambda s: s.register_broker(self.id, os.getpid()))
        if self._adopt:
            await self._decisions.finish_journals()
            await self._adoption.sweep_if_alone()
            await self.adopt()
        self._spawn(self._tick(), "tick")

    async def _tick(self) -> None:
        """Once a second: reap ended wrappers, heartbeat, retry unsaved task states."""
        while not self._closed:
            await asyncio.sleep(1.0)
            procs.reap()
            with contextlib.suppress(Exception):
                await self.store.call(Store.heartbeat, self.id)
            if self._dependents.waiting:
                with contextlib.suppress(Exception):
                    await self._dependents.release()
            await self.book.retry_unsaved()

    async def close(self) -> None:
        """Stop following; running agents keep running and the next broker adopts them."""
        self._closed = True
        self._loop.close()
        self._drafts.close()
        await self._desk.close()
        # Let agents being started get their attempt recorded first.
        await self._attempts.launches_done(10.0)
        await self._attempts.close()
        for t in list(self._background):
            t.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await self.book.release_all()
        await self.settings.close()
        await self.bus.close()
        await self.store.call(lambda s: s.unregister_broker(self.id))
        await self.store.close()

    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._background.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._background.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("%s failed", name, exc_info=t.exception())

        task.add_done_callback(done)
        return task

    async def adopt(self) -> list[str]:
        """Take over the tasks of brokers that are gone. Returns the adopted task ids."""
        return await self._adoption.adopt()

    # ------------------------------------------------------------------ delegating

    async def delegate(self, req: DelegateRequest) -> Task:
        """Record the task and return it at once; the work starts in the background."""
        root = str(Path(req.root).resolve())
        settings = self._settings(root)
        cooling, evidence = await self._availability()
        try:
            route = routes.decide(settings, req, cooling=cooling, evidence=evidence)
        except RoutingError as exc:
            raise TaskError(str(exc)) from None
        task = task_for(req, settings, route)
        if req.depends_on:
            task.options["depends_on"] = [
                await self.store.call(Store.resolve_id, i) for i in req.depends_on
            ]
        keep = functools.partial(
            store_request,
            task,
            task_dir(self.home, task.id),
            diagnostics=req.diagnostics,
            overlays=req.overlays,
            rules=req.rules,
        )
        if req.overlays:  # unsaved buffers go to a file; the rest is only options
            await asyncio.to_thread(keep)
        else:
            keep()
        await self.book.insert(task)
        waits = " after " + ", ".join(task.options["depends_on"]) if req.depends_on else ""
        # The task is durable now; its first event is committed with the next batch.
        first = self.bus.emit_nowait([state_event(task.id, None, S.QUEUED, "delegated" + waits)])
        first.add_done_callback(_log_if_failed)
        if req.depends_on:
            self._dependents.add(task)
            self._spawn(self._dependents.release(), f"dependents of {task.id}")
        elif route.hold_until is not None:
            await self.book.log(task, f"waiting: {route.reason}")
            self._loop.start_later(task, route.hold_until)
        else:
            self._loop.start(task, NextTurn("", "first"))
        return task

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
            self._profile(w, req.root)
        group = "g" + new_task_id()
        options = {**req.options, "compare": True}
        return [
            await self.delegate(dataclasses.replace(req, worker=w, group=group, options=options))
            for w in workers
        ]

    # ------------------------------------------------------------------ steering the work

    async def cancel(self, task_id: str) -> Task:
        task = await self._adoption.owned_or_adopt(task_id)
        async with self.book.lock(task.id):
            live = self._attempts.live.get(task.id)
            if live is not None and not live.side:
                await self._attempts.stop(live, Stop(Completion.CANCELLED, "cancelled by the user"))
                return task
            if task.state in (S.QUEUED, S.NEEDS_INPUT, S.RATE_LIMITED, S.INTERRUPTED):
                self._loop.cancel_timer(task.id)
                await self.book.move(
                    task, S.CANCELLED, "cancelled by the user", Completion.CANCELLED
                )
                return task
            if task.state in (S.PREPARING, S.RUNNING, S.VERIFYING):
                # Between steps (snapshot, starting the agent, checks): the work stops at
                # its next step, which moves the task to cancelled.
                self.book.cancelling.add(task.id)
                if live is not None:  # the reviewer is at work: stop it too
                    await self._attempts.stop(live, Stop(Completion.CANCELLED, "cancelled"))
                return task
            raise TaskError(f"task {task.id} is {task.state}: nothing to cancel")

    async def reply(
        self, task_id: str, text: str, *, options: Mapping[str, Any] | None = None
    ) -> Task:
        """Answer a question (needs_input) or ask for changes (review): resumes the session.

        ``options`` are recorded on the task with the move (a revision's review record)."""
        task = await self._adoption.owned_or_adopt(task_id)
        not_a_proposal(task, "reply")
        async with self.book.lock(task.id):
            if task.state not in (S.NEEDS_INPUT, S.REVIEW):
                raise TaskError(
                    f"task {task.id} is {task.state}; reply is for needs_input or review"
                    + ("; use steer while it runs" if task.state == S.RUNNING else "")
                )
            if task.id in self._attempts.live:
                raise TaskError(
                    f"task {task.id} asks permission; answer it (baton answer), or cancel"
                )
            if task.worktree and not await asyncio.to_thread(Path(task.worktree).is_dir):
                raise TaskError(  # reviewed again after an undo: its checkout was removed
                    f"task {task.id}'s checkout was removed when it was applied; accept or "
                    "reject its hunks, or delegate the change again"
                )
            task.options.update(options or {})
            await self.book.move(task, S.RUNNING, "reply")
            self._loop.start(task, NextTurn(text, "reply"))
            return task

    async def revise(
        self,
        task_id: str,
        comments: Sequence[Comment],
        rejections: Mapping[str, str] | None = None,
    ) -> Task:
        """Comments on a task in review (and reasons of rejected hunks) as its next turn."""
        return await self._revisions.revise(task_id, comments, rejections)

    async def checkpoints(self, task_id: str) -> list[dict[str, Any]]:
        """The kept results of a revised task's turns (``[{turn, commit, shown}]``)."""
        return await self._revisions.checkpoints(task_id)

    async def step_back(self, task_id: str, turn: int) -> Task:
        """Show an earlier turn's kept result as the diff of a task in review."""
        return await self._revisions.step_back(task_id, turn)

    async def steer(self, task_id: str, text: str) -> Task:
        """Interrupt the running attempt and continue the same session with new guidance."""
        task = await self._adoption.owned_or_adopt(task_id)
        async with self.book.lock(task.id):
            live = self._attempts.live.get(task.id)
            if task.state != S.RUNNING or live is None:
                raise TaskError(
                    f"task {task.id} is {task.state}; steer is for running tasks"
                    + ("; use reply" if task.state in (S.NEEDS_INPUT, S.REVIEW) else "")
                )
            await self._attempts.stop(live, Stop(Completion.CANCELLED, f"steer: {text}", text))
        return task

    async def retry(self, task_id: str) -> Task:
        task = await self._adoption.owned_or_adopt(task_id)
        not_a_proposal(task, "retry")
        async with self.book.lock(task.id):
            if task.state not in (S.FAILED, S.CANCELLED, S.INTERRUPTED, S.ANSWERED):
                raise TaskError(f"task {task.id} is {task.state}; retry is for settled tasks")
            await self.book.move(task, S.QUEUED, "retry")
            task.completion, task.message = None, ""
            turn = "retry" if task.worktree else "first"
            self._loop.start(task, NextTurn(task.brief, turn))
            return task

    async def handoff(self, task_id: str, worker: str | None = None) -> Task:
        """Hand a failed, cancelled, interrupted or rate-limited task to another worker.

        The task keeps its id, worktree, events and attempts; the new worker starts a fresh
        session with the brief. Without ``worker``, the project's routing picks the next one.
        """
        task = await self._adoption.owned_or_adopt(task_id)
        not_a_proposal(task, "handoff")
        async with self.book.lock(task.id):
            handable = (S.FAILED, S.CANCELLED, S.INTERRUPTED, S.RATE_LIMITED)
            if task.state not in handable:
                raise TaskError(
                    f"task {task.id} is {task.state}; handoff is for failed, cancelled, "
                    "interrupted or rate-limited tasks"
                )
            if not await self._loop.hand_off(task, "handed off by the user", worker, False):
                raise TaskError(f"no other worker may take task {task.id}")
            return task

    async def permissions(self, task_id: str) -> list[dict[str, Any]]:
        """The task's ACP permission requests still waiting for an answer."""
        return acp.pending_permissions(await self.events(task_id))

    async def answer(
        self, task_id: str, option: str, permission_id: str | None = None
    ) -> dict[str, Any]:
        """Answer an ACP permission request: ``option`` is an option id, a kind
        (``allow_once``…) or a word (``allow``, ``always``, ``reject``). Any broker may
        answer: the answer goes straight to the task's runner."""
        task = await self.get(task_id)
        if not await self.permissions(task.id):
            raise TaskError(f"task {task.id} is {task.state}; no permission request is waiting")
        try:
            answered = await acp.answer(task_dir(self.home, task.id), permission_id, option)
        except acp.ControlError as exc:
            raise TaskError(f"task {task.id}: {exc}") from None
        return {"taskId": task.id, "permission": answered.get("id"), "option": answered["option"]}

    def request_draft(self, task_id: str) -> bool:
        """Recompute a running task's draft diff soon (debounced), e.g. when a file watcher
        saw its worktree change. False when no running task of this broker has that id."""
        task = self.book.tasks.get(task_id)
        if task is None or task.state != S.RUNNING:
            return False
        self._drafts.schedule(task)
        return True

    def following(self, task_id: str) -> bool:
        """Whether this broker follows an attempt of the task right now."""
        return task_id in self._attempts.live

    # ------------------------------------------------------------------ reading

    async def get(self, task_id: str) -> Task:
        return await self.book.get(task_id)

    async def list_tasks(self, **filters: Any) -> list[Task]:
        tasks: list[Task] = await self.store.call(lambda s: s.list_tasks(**filters))
        return [self.book.tasks.get(t.id, t) for t in tasks]

    async def events(self, task_id: str, after: int = 0, limit: int | None = None) -> list[Event]:
        tid = await self.store.call(lambda s: s.resolve_id(task_id))
        events: list[Event] = await self.store.call(lambda s: s.events(tid, after, limit))
        return events

    async def attempts(self, task_id: str) -> list[Attempt]:
        attempts: list[Attempt] = await self.store.call(lambda s: s.attempts(task_id))
        return attempts

    def subscribe(self, task_ids: set[str] | None = None) -> Subscription:
        return self.bus.subscribe(task_ids)

    async def diff(self, task_id: str) -> tuple[list[FileDiff], bool]:
        """The latest diff (draft or final) with each hunk's decision."""
        task = await self.get(task_id)
        return await self._drafts.load(task.id)

    async def owner_of(self, task_id: str) -> str | None:
        """The broker that supervises the task now (None when none needs to)."""
        owner: str | None = await self.store.call(lambda s: s.owner_of(task_id))
        return owner

    async def count_by_state(
        self, roots: Sequence[str] = (), *, failed_since: float | None = None
    ) -> dict[str, int]:
        """Tasks per state over ``roots`` (all when none); with ``failed_since``, the
        ``failed`` count holds only tasks that failed since then."""
        return await self.store.call(count_by_state, list(roots), failed_since)

    def busy(self) -> bool:
        """Tasks of this broker still need it (queued, running, or waiting for a reset)."""
        return any(t.state in OWNED for t in self.book.tasks.values())

    async def memory(
        self, root: str, *, add: str | None = None, remove: int | None = None
    ) -> list[tuple[int, str]]:
        """The project facts that go into every brief for ``root``, after adding or
        removing one; raises :class:`TaskError` for an unknown id."""
        if add is not None:
            await self.store.call(lambda s: s.add_memory(root, add))
        if remove is not None and not await self.store.call(lambda s: s.remove_memory(remove)):
            raise TaskError(f"no memory {remove}")
        items: list[tuple[int, str]] = await self.store.call(lambda s: s.list_memory(root))
        return items

    def listen(self, listener: Listener) -> None:
        """Call ``listener`` with each event once it is stored."""
        self.bus.add_listener(listener)

    def unlisten(self, listener: Listener) -> None:
        self.bus.remove_listener(listener)

    def listen_batches(self, listener: BatchListener) -> None:
        """Call ``listener`` with each committed batch of events (with its encoded form)."""
        self.bus.add_batch_listener(listener)

    def unlisten_batches(self, listener: BatchListener) -> None:
        self.bus.remove_batch_listener(listener)

    def profiles_for(self, root: str | Path) -> dict[str, Profile]:
        """The workers a task delegated in ``root`` may name (the project's own included)."""
        settings = self.settings.last_good(root)
        return {**self.profiles, **(settings.profiles if settings is not None else {})}

    # ------------------------------------------------------------------ decisions

    async def accept(
        self,
        task_id: str,
        hunk_ids: Sequence[str] | None = None,
        *,
        current: Mapping[str, str] | None = None,
        write: bool = True,
        applied_by_client: Callable[[AcceptResult], Coroutine[Any, Any, bool]] | None = None,
        allow_secret: bool = False,
        theirs: Sequence[str] = (),
    ) -> AcceptResult:
        """Apply all pending hunks, or the chosen ones, to the user's files (see
        :meth:`baton.runtime.decisions.Decisions.accept`); a hunk that writes a secret value
        is refused unless ``allow_secret``; hunks in ``theirs`` replace the user's lines
        at their place ("take theirs")."""
        return await self._decisions.accept(
            task_id,
            hunk_ids,
            current=current,
            write=write,
            applied_by_client=applied_by_client,
            allow_secret=allow_secret,
            theirs=theirs,
        )

    async def redo(self, task_id: str, hunk_id: str, current: str | None = None) -> Task:
        """Ask the agent to redo a hunk against the user's text of its file (``current``:
        an open buffer's; else the file on disk): a reply turn (see :mod:`baton.runtime.redo`)."""
        task = await self._adoption.owned_or_adopt(task_id)
        if task.state != S.REVIEW:
            raise TaskError(f"task {task.id} is {task.state}; redo is for tasks in review")
        files, _ = await self._drafts.load(task.id)
        prompt = await redo_turn(task, files, hunk_id, current)
        await self.book.save(task)
        return await self.reply(task.id, prompt)

    async def reject(self, task_id: str, hunk_ids: Sequence[str] | None = None) -> list[str]:
        return await self._decisions.reject(task_id, hunk_ids)

    async def reopen(
        self, task_id: str, hunk_ids: Sequence[str], *, current: Mapping[str, str] | None = None
    ) -> Redecided:
        """Accepted hunks the user undid (their place holds the old lines again) are pending
        again; see :meth:`baton.runtime.decisions.Decisions.reopen`."""
        return await self._decisions.reopen(task_id, hunk_ids, current=current)

    async def reaccept(
        self, task_id: str, hunk_ids: Sequence[str], *, current: Mapping[str, str] | None = None
    ) -> Redecided:
        """Pending hunks the user redid (their place holds the new lines) are accepted,
        writing nothing; see :meth:`baton.runtime.decisions.Decisions.reaccept`."""
        return await self._decisions.reaccept(task_id, hunk_ids, current=current)

    async def _after_decided(self, task: Task) -> None:
        if task.state == S.APPLIED and task.group and task.options.get("compare"):
            members = await self.list_tasks(group=task.group, limit=None)
            await close_group(
                task,
                members,
                diff=self.diff,
                reject=self.reject,
                cancel=self.cancel,
                log=self.book.log,
            )
        if self._dependents.waiting:
            self._spawn(self._dependents.release(), f"dependents after {task.id}")

    # ------------------------------------------------------------------ proposals

    async def propose(
        self,
        file: str | Path,
        base: str | None,
        new: str,
        *,
        root: str | Path,
        title: str,
        source: str,
        meta: Mapping[str, Any] | None = None,
    ) -> tuple[Task, asyncio.Future[str | None]]:
        """Record an edit another tool proposes (see :meth:`ProposalDesk.propose`)."""
        return await self._desk.propose(
            file, base, new, root=root, title=title, source=source, meta=meta
        )

    async def withdraw(self, task_id: str, reason: str) -> None:
        """The proposer no longer waits (it was answered elsewhere, or went away)."""
        await self._desk.withdraw(task_id, reason)

    # ------------------------------------------------------------------ helpers

    async def _secrets_of(self, task: Task) -> list[str]:
        return await self._attempts.secrets_of(task, self.profiles_for(task.root))

    def _draft_soon(self, task: Task) -> None:
        self._drafts.schedule(task)

    def _following(self, task_id: str) -> bool:
        live = self._attempts.live.get(task_id)
        return live is not None and live.attempt.ended_at is None

    def _settings(self, root: str) -> Settings:
        try:
            return self.settings.get(root)
        except ConfigError as exc:
            raise TaskError(f"Baton's settings: {exc}") from None

    def _profile(self, name: str, root: str | None = None) -> Profile:
        """A worker's profile in the settings of ``root`` (the broker's defaults without)."""
        return configured_profile(self.settings, self.profiles, name, root)


def _log_if_failed(fut: asyncio.Future[list[Event]]) -> None:
    if not fut.cancelled() and fut.exception() is not None:
        log.error("could not record an event: %s", fut.exception())


__all__ = [
    "DelegateRequest",
    "Limits",
    "Supervisor",
    "TaskError",
    "UnknownTask",
    "broker_alive",
]
