"""The supervisor: the face the surfaces use to own tasks from delegate to settle.

``delegate`` records the task — its route and worker decided once, with what its brief and
snapshot will need — and returns at once; the turn loop (:mod:`baton.runtime.turns`) does
the work in the background, one attempt at a time. Agents run detached, so closing the
broker never kills work: the next broker adopts it (:mod:`baton.runtime.adoption`).
This module wires the parts together and hands each request to the part that does it; it
holds no task logic itself:

- :mod:`~baton.runtime.book` — the tasks this broker owns, the one writer of transitions;
- :mod:`~baton.runtime.delegation` — a request becomes a task, its route decided once;
- :mod:`~baton.runtime.steering` — cancel, steer, reply, retry, hand off, complete, redo,
  answer;
- :mod:`~baton.runtime.prepare` — snapshot, worktree, brief, clean-up (safe to repeat);
- :mod:`~baton.runtime.attempts` — one attempt: recorded, started, followed;
- :mod:`~baton.runtime.turns` — the turn loop, slots, rate limits, hand-offs;
- :mod:`~baton.runtime.verify` — checks and the independent review;
- :mod:`~baton.runtime.drafts` — the diff, draft and final;
- :mod:`~baton.runtime.decisions` — accept and reject, through a journal (and the
  reopen and reaccept of an editor's undo and redo, :mod:`~baton.runtime.reopen`);
- :mod:`~baton.runtime.revision` — comments as the next turn, and earlier turns' results;
- :mod:`~baton.runtime.proposals` — edits other tools propose;
- :mod:`~baton.runtime.archive` — settled tasks hidden from task lists;
- :mod:`~baton.runtime.editing` — a task that has not started, changed (or requeued);
- :mod:`~baton.runtime.adoption` — taking over from a broker that is gone;
- :mod:`~baton.runtime.graph` — tasks that wait for others;
- :mod:`~baton.runtime.bench` — a suite's cases on several workers (``bench``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

from baton.acp import transport as acp
from baton.config.profiles import Profile, default_profiles
from baton.config.watch import SettingsCache
from baton.core.budget import Caps
from baton.core.diff import FileDiff
from baton.core.events import Event, EventType
from baton.core.lifecycle import TaskState
from baton.core.revision import Comment
from baton.core.settle import NextTurn
from baton.core.task import Attempt, Task
from baton.process import spawn as procs
from baton.runtime.adoption import Adoption
from baton.runtime.archive import archive
from baton.runtime.attempts import Attempts
from baton.runtime.bench import Bench
from baton.runtime.book import OWNED, Book, count_by_state
from baton.runtime.broker import Limits, TaskError, broker_alive, broker_id
from baton.runtime.budgets import BudgetWatch
from baton.runtime.bus import BatchListener, EventBus, Listener, Subscription
from baton.runtime.cleaning import Cleaned
from baton.runtime.decisions import Decisions
from baton.runtime.delegation import Delegation
from baton.runtime.dispatch import Availability
from baton.runtime.drafts import Drafts
from baton.runtime.editing import Editing, TaskEdit
from baton.runtime.graph import Dependents, close_group
from baton.runtime.groups import Shifts
from baton.runtime.overlaps import diff_notes
from baton.runtime.prepare import Preparer
from baton.runtime.proposals import ProposalDesk
from baton.runtime.recorded import configured_profile
from baton.runtime.reopen import Redecided
from baton.runtime.requests import DelegateRequest, GraphNode
from baton.runtime.revision import Revisions
from baton.runtime.steering import Steering
from baton.runtime.turns import TurnLoop
from baton.runtime.verify import Verifier
from baton.store import AsyncStore, Store, UnknownTask
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
        availability = Availability(self.store, lambda: self.bus.inline)
        self._closed = False
        # The parts, each given what it needs (see the module's docstring for who does what).
        home, settings, limits, spawn = self.home, self.settings, self.limits, self._spawn
        book = self.book = Book(self.store, self.bus, self.id)
        attempts = self._attempts = Attempts(home, book, settings, limits, self._draft_soon)
        self._shifts = Shifts(attempts, settings.last_good)
        drafts = self._drafts = Drafts(
            book, limits.draft_debounce, self._following, spawn, self._secrets_of
        )
        preparer = self._preparer = Preparer(home, book, settings)
        verifier = Verifier(home, book, attempts, drafts, self._profile, self._secrets_of)
        loop = self._loop = TurnLoop(
            book,
            preparer,
            attempts,
            drafts,
            verifier,
            settings,
            self.profiles_for,
            spawn,
            availability,
        )
        desk = self._desk = ProposalDesk(home, book, drafts)
        dependents = self._dependents = Dependents(
            book, lambda t: loop.start(t, NextTurn("", "first"))
        )
        self._decisions = Decisions(
            home, book, drafts, preparer, desk, self._after_decided, self._secrets_of
        )
        self._adoption = adoption = Adoption(
            home, book, attempts, loop, desk, settings, limits, dependents.add
        )
        self._delegation = Delegation(
            home, book, settings, availability, loop, dependents, spawn, self._profile
        )
        self._steering = Steering(home, book, attempts, loop, drafts, adoption.owned_or_adopt)
        budgets = self._budgets = BudgetWatch(home, book, settings, attempts.stop)
        attempts.watcher = loop.budgets = self._steering.budgets = budgets
        self._revisions = Revisions(book, drafts, self._steering.reply)
        self._editing = Editing(
            book, settings, availability, loop, dependents, spawn, adoption.owned_or_adopt
        )
        self.bench = Bench(self.store, book, settings, spawn, self.delegate, self.cancel,
                           self.reject, self.profiles_for)  # fmt: skip
        self.bus.add_listener(self.bench.on_event)

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
            self._spawn(self.bench.sweep(), "bench sweep")
        self._spawn(self._tick(), "tick")

    async def _tick(self) -> None:
        """Once a second: reap ended wrappers, heartbeat, retry unsaved task states."""
        while not self._closed:
            await asyncio.sleep(1.0)
            procs.reap()
            with contextlib.suppress(Exception):
                await self.store.call(Store.heartbeat, self.id)
            with contextlib.suppress(Exception):
                await self._shifts.check()
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
        await self._budgets.close()
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
        return await self._delegation.delegate(req)

    async def delegate_graph(self, nodes: Sequence[GraphNode]) -> dict[str, Task]:
        """Delegate tasks that wait for others (see :meth:`Delegation.delegate_graph`)."""
        return await self._delegation.delegate_graph(nodes)

    async def compare(self, req: DelegateRequest, workers: Sequence[str]) -> list[Task]:
        """One brief to several workers at once (a group); accepting one rejects the rest."""
        return await self._delegation.compare(req, workers)

    # ------------------------------------------------------------------ steering the work

    async def cancel(self, task_id: str) -> Task:
        return await self._steering.cancel(task_id)

    async def reply(
        self, task_id: str, text: str, *, options: Mapping[str, Any] | None = None
    ) -> Task:
        """Answer a question (needs_input) or ask for changes (review): resumes the session."""
        return await self._steering.reply(task_id, text, options=options)

    async def steer(self, task_id: str, text: str) -> Task:
        """Interrupt the running attempt and continue the same session with new guidance."""
        return await self._steering.steer(task_id, text)

    async def retry(self, task_id: str, caps: Caps | None = None) -> Task:
        """Start a settled task again; ``caps`` raise its own caps (see
        :meth:`Steering.retry`)."""
        return await self._steering.retry(task_id, caps)

    async def handoff(self, task_id: str, worker: str | None = None) -> Task:
        """Hand a settled task to another worker (see :meth:`Steering.handoff`)."""
        return await self._steering.handoff(task_id, worker)

    async def complete(self, task_id: str, evidence: str) -> Task:
        """Put a stopped task whose checkout holds changes up for review on the user's word
        (see :meth:`Steering.complete`)."""
        return await self._steering.complete(task_id, evidence)

    async def archive(self, task_ids: Sequence[str], *, undo: bool = False) -> list[Task]:
        """Hide settled tasks from task lists, history kept (see :mod:`baton.runtime.archive`);
        ``undo`` lists them again."""
        return await archive(self.book, task_ids, undo=undo)

    async def clean(self) -> Cleaned:
        """Remove what no task needs on disk and apply ``[retention]`` (``baton clean``; see
        :mod:`baton.runtime.cleaning`)."""
        return await self._adoption.cleaner.clean()

    async def edit(self, task_id: str, edit: TaskEdit) -> Task:
        """Change a task that has not started, or requeue one cancelled before it started
        (see :mod:`baton.runtime.editing`)."""
        return await self._editing.edit(task_id, edit)

    async def permissions(self, task_id: str) -> list[dict[str, Any]]:
        """The task's ACP permission requests still waiting for an answer."""
        return acp.pending_permissions(await self.events(task_id))

    async def answer(
        self, task_id: str, option: str, permission_id: str | None = None
    ) -> dict[str, Any]:
        """Answer an ACP permission request (see :meth:`Steering.answer`)."""
        task = await self.get(task_id)
        return await self._steering.answer(task, await self.events(task.id), option, permission_id)

    def request_draft(self, task_id: str) -> bool:
        """Recompute a running task's draft diff soon (debounced), e.g. when a file watcher
        saw its worktree change. False when no running task of this broker has that id."""
        return self._drafts.request(task_id)

    def following(self, task_id: str) -> bool:
        """Whether this broker follows an attempt of the task right now."""
        return task_id in self._attempts.live

    # ------------------------------------------------------------------ reading

    async def get(self, task_id: str) -> Task:
        return await self.book.get(task_id)

    async def list_tasks(self, **filters: Any) -> list[Task]:
        tasks = await self.store.call(lambda s: s.list_tasks(**filters))
        return [self.book.tasks.get(t.id, t) for t in tasks]

    async def events(self, task_id: str, after: int = 0, limit: int | None = None) -> list[Event]:
        tid = await self.store.call(Store.resolve_id, task_id)
        return await self.store.call(Store.events, tid, after, limit)

    async def state_events(self, task_ids: Sequence[str]) -> list[Event]:
        """The ``state`` events of these tasks (full ids), in order per task."""
        return await self.store.call(Store.events_of_type, list(task_ids), EventType.STATE)

    async def attempts(self, task_id: str) -> list[Attempt]:
        return await self.store.call(Store.attempts, task_id)

    def subscribe(self, task_ids: set[str] | None = None) -> Subscription:
        return self.bus.subscribe(task_ids)

    async def diff(self, task_id: str) -> tuple[list[FileDiff], bool]:
        """The latest diff (draft or final) with each hunk's decision."""
        task = await self.get(task_id)
        return await self._drafts.load(task.id)

    async def diff_notes(self, task_id: str, files: Sequence[FileDiff]) -> dict[str, Any]:
        """What a diff answer adds when it applies (see :mod:`baton.runtime.overlaps`):
        ``overlaps``, the other live tasks changing the same files, and ``standing``, where
        each pending hunk of a file changed on disk since the snapshot stands now."""
        return await diff_notes(self.book, await self.get(task_id), files)

    async def owner_of(self, task_id: str) -> str | None:
        """The broker that supervises the task now (None when none needs to)."""
        return await self.store.call(Store.owner_of, task_id)

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
            await self.store.call(Store.add_memory, root, add)
        if remove is not None and not await self.store.call(Store.remove_memory, remove):
            raise TaskError(f"no memory {remove}")
        return await self.store.call(Store.list_memory, root)

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
        """Apply all pending hunks, or the chosen ones, to the user's files, through a
        journal (see :meth:`Decisions.accept`: secret values, "take theirs", the editor)."""
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
        """Ask the agent to redo a hunk against the user's text (see :meth:`Steering.redo`)."""
        return await self._steering.redo(task_id, hunk_id, current)

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

    async def reject(self, task_id: str, hunk_ids: Sequence[str] | None = None) -> list[str]:
        return await self._decisions.reject(task_id, hunk_ids)

    async def reopen(
        self, task_id: str, hunk_ids: Sequence[str], *, current: Mapping[str, str] | None = None
    ) -> Redecided:
        """Accepted hunks the user undid are pending again (see :meth:`Decisions.reopen`)."""
        return await self._decisions.reopen(task_id, hunk_ids, current=current)

    async def reaccept(
        self, task_id: str, hunk_ids: Sequence[str], *, current: Mapping[str, str] | None = None
    ) -> Redecided:
        """Pending hunks the user redid are accepted, writing nothing."""
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

    async def secrets_of(self, task: Task) -> list[str]:
        """The secret values to mask in what is shown of ``task`` (its profile's)."""
        return await self._secrets_of(task)

    # ------------------------------------------------------------------ helpers

    async def _secrets_of(self, task: Task) -> list[str]:
        return await self._attempts.secrets_of(task, self.profiles_for(task.root))

    def _draft_soon(self, task: Task) -> None:
        self._drafts.schedule(task)

    def _following(self, task_id: str) -> bool:
        live = self._attempts.live.get(task_id)
        return live is not None and live.attempt.ended_at is None

    def _profile(self, name: str, root: str | None = None) -> Profile:
        """A worker's profile in the settings of ``root`` (the broker's defaults without)."""
        return configured_profile(self.settings, self.profiles, name, root)


__all__ = [
    "DelegateRequest",
    "Limits",
    "Supervisor",
    "TaskError",
    "UnknownTask",
    "broker_alive",
]
