"""The turn loop: one background job per task holds its worker's slot and runs its turns.

prepare (first turn) → start one attempt → follow it → settle: :func:`baton.core.settle.settle`
says what the end means — another turn (a steer, a repair), a settled state, a rate limit
to hold out or hand off, a question — and the loop goes on or stops. A turn is a
:class:`~baton.core.settle.NextTurn` value. Automatic attempts are capped per task
(``max_attempts``). A step that cannot go on fails the task with a message; nothing raises
into the background job.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import baton.runtime.accounts as accounts
import baton.runtime.remote as remote
from baton.config.profiles import Profile
from baton.config.watch import SettingsCache
from baton.core import usage
from baton.core.lifecycle import SETTLED, Completion, TaskState
from baton.core.routing import RoutingError
from baton.core.settle import (
    AUTOMATIC,
    DEFAULT_MAX_ATTEMPTS,
    Ask,
    Continue,
    Inspect,
    NextTurn,
    RateLimited,
    Settle,
    after_budget,
    after_changes,
    gave_up,
    out_of_attempts,
    settle,
)
from baton.core.task import Task
from baton.core.usage import price_for
from baton.faults import crash_point
from baton.runtime.attempts import Attempts, Live, StartFailed
from baton.runtime.book import Book
from baton.runtime.broker import TaskError
from baton.runtime.budgets import BudgetWatch
from baton.runtime.dispatch import handoff_route
from baton.runtime.drafts import Drafts
from baton.runtime.groups import live_per_group
from baton.runtime.prepare import Preparer
from baton.runtime.recorded import (
    checks_of,
    fresh_prompt,
    profile_of,
    reviewer_of,
    store_profile,
    turn_of,
)
from baton.runtime.revision import tell_result
from baton.runtime.slots import Slots
from baton.runtime.verify import Verifier, record_evidence

log = logging.getLogger(__name__)
S = TaskState
#: States a task may be in when its loop (re)starts; any other means it moved on meanwhile.
_STARTABLE = frozenset({S.QUEUED, S.PREPARING, S.RUNNING})


class TurnLoop:
    def __init__(
        self,
        book: Book,
        preparer: Preparer,
        attempts: Attempts,
        drafts: Drafts,
        verifier: Verifier,
        settings: SettingsCache,
        profiles: Callable[[str], Mapping[str, Profile]],
        spawn: Callable[[Any, str], object],
        availability: Callable[[], Any],
    ) -> None:
        self.book = book
        self.preparer = preparer
        self.attempts = attempts
        self.drafts = drafts
        self.verifier = verifier
        self.settings = settings
        self.profiles = profiles  # root → the profiles a task there may use
        self._spawn = spawn
        self._availability = availability
        self._slots: dict[str, Slots] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self.budgets: BudgetWatch | None = None  # refuses a start once a cap is reached
        self._versions: dict[str, int] = {}  # task id → edits so far (runtime/editing.py)
        self._editing: set[str] = set()  # queued tasks being edited right now

    # ------------------------------------------------------------------ entry points

    def start(self, task: Task, turn: NextTurn) -> None:
        """Run ``turn`` for ``task`` in the background (once its worker has a free slot)."""
        if task.id in self._editing:
            return  # the edit starts the new version itself when it is recorded
        version = self._versions.get(task.id, 0)
        self._spawn(self.drive(task, turn, version=version), f"task {task.id}")

    def void(self, task_id: str) -> None:
        """A queued task is being edited: starts asked for before now never happen, nor do
        any asked for until :meth:`edited`."""
        self._versions[task_id] = self._versions.get(task_id, 0) + 1
        self._editing.add(task_id)

    def edited(self, task_id: str) -> None:
        """The edit is recorded (or refused): the task may be started again."""
        self._editing.discard(task_id)

    def timed(self, task_id: str) -> bool:
        """Whether a timer will start (or resume) the task."""
        return task_id in self._timers

    def follow(self, task: Task, live_args: tuple[Any, ...]) -> None:
        """Follow an attempt another broker started, then go on as for any turn."""
        self._spawn(self.drive(task, None, adopted=live_args), f"adopted {task.id}")

    def reverify(self, task: Task) -> None:
        """Verify again a task whose broker died while verifying it."""
        self._spawn(self.drive(task, None, reverify=True), f"verify {task.id}")

    async def drive(
        self,
        task: Task,
        turn: NextTurn | None,
        *,
        adopted: tuple[Any, ...] | None = None,
        reverify: bool = False,
        version: int | None = None,
    ) -> None:
        """Hold the worker's slot and run turns until the task settles or waits; a start
        of a version of the task since edited (``version``) does nothing."""
        try:
            async with self._slot(task).hold():
                if version is not None and version != self._versions.get(task.id, 0):
                    return
                if adopted is not None:
                    live = await self.attempts.follow(task, *adopted[:3], past=adopted[3])
                    turn = await self._settle(task, live)
                elif reverify:
                    turn = await self._inspect(task)
                while turn is not None:
                    turn = await self._turn(task, turn)
        except Exception as exc:
            log.exception("task %s: the turn loop stopped", task.id)
            await self._fail(task, f"{type(exc).__name__}: {exc}")

    def _slot(self, task: Task) -> Slots:
        """The places of the task's worker (its profile's concurrency, every broker's)."""
        if task.worker not in self._slots:
            try:
                cap = profile_of(task, self.profiles(task.root)).concurrency
            except TaskError:
                cap = 1
            self._slots[task.worker] = Slots(self.preparer.home, task.worker, cap)
        return self._slots[task.worker]

    async def _fail(self, task: Task, message: str) -> None:
        if task.state in SETTLED or task.state == S.REVIEW:
            return
        try:
            await self.book.move(task, S.FAILED, message, Completion.WORKER_ERROR)
        except Exception:
            log.exception("task %s: could not record its failure", task.id)

    # ------------------------------------------------------------------ one turn

    async def _turn(self, task: Task, turn: NextTurn) -> NextTurn | None:
        if task.state not in _STARTABLE:
            return None  # cancelled (or moved on) while it waited for the slot
        if self.budgets is not None and await self._over_budget(task):
            return None
        if task.state == S.QUEUED:
            first = turn.reason == "first"
            await self.book.move(task, S.PREPARING, "taking a snapshot" if first else turn.reason)
        if turn.reason == "first" or not task.worktree:
            if task.worktree is None and turn.reason != "first":
                await self.book.move(
                    task, S.FAILED, "its worktree is gone; delegate again", Completion.WORKER_ERROR
                )
                return None
            try:
                await self.preparer.prepare(task)
            except Exception as exc:
                log.warning("task %s: preparing failed: %s", task.id, exc)
                await self.book.move(
                    task, S.FAILED, f"could not prepare: {exc}", Completion.WORKER_ERROR
                )
                return None
        elif not Path(task.worktree).exists():
            await self.book.move(
                task, S.FAILED, "its worktree is gone; delegate again", Completion.WORKER_ERROR
            )
            return None
        if await self._stop_if_cancelled(task):
            return None
        if turn.reason == "first":
            turn = NextTurn(task.brief, "first")  # the brief is built while preparing
        # No attempt recorded yet (a first turn): nothing to count, no trip to the store.
        reasons = await self._reasons(task) if task.attempts else []
        if turn.reason in AUTOMATIC and out_of_attempts(reasons, self._cap(task)):
            last = task.message if task.completion == Completion.RATE_LIMIT else ""
            await self._settle_as(task, gave_up(reasons, last))
            return None
        profile = profile_of(task, self.profiles(task.root))
        try:
            attempt, transport, record = await self.attempts.start(task, profile, turn)
        except StartFailed as exc:
            await self.book.log(task, f"could not start {profile.name}: {exc}", "error")
            await self.book.move(task, S.FAILED, str(exc), exc.completion)
            return None
        if task.state != S.RUNNING:
            await self.book.move(task, S.RUNNING, f"{profile.name} started")
        live = await self.attempts.follow(task, attempt, transport, record)
        return await self._settle(task, live)

    async def _settle(self, task: Task, live: Live) -> NextTurn | None:
        """The attempt ended: record how, and decide what the task does next."""
        attempt, outcome, stop = live.attempt, live.outcome, live.stop
        steer = stop is not None and stop.steer is not None
        attempt.completion = (
            stop.completion if stop is not None and not steer else outcome.completion
        )
        attempt.session_id = outcome.session_id or attempt.session_id
        settings = self.settings.last_good(task.root)
        if not outcome.usage.empty:
            model = outcome.model or attempt.model or task.model
            price = settings.price_for(model) if settings else price_for(model)
            own = outcome.usage
            if outcome.session_totals or outcome.seen_input is not None:
                # A resumed session's earlier turns counted once, not again by each turn.
                own = usage.own_part(
                    task.options, attempt.n, attempt.session_id, own, seen_input=outcome.seen_input
                )
            usage.record_attempt(task.options, attempt.n, own.priced(price))
        await self.book.save_attempt(attempt)
        crash_point("after_attempt_end")
        if task.state == S.NEEDS_INPUT:  # a permission was still open
            await self.book.move(task, S.RUNNING, "the turn ended")
        cooldown = settings.cooldown_for(task.provider) if settings else 60.0
        lost_before = bool(task.options.get("session_lost"))
        decision = settle(
            outcome, stop, now=time.time(), cooldown=cooldown, lost_before=lost_before
        )
        again = await remote.again_elsewhere(self.book, task, attempt, decision)
        if again is not None:  # its node was lost: interrupted, then retried elsewhere
            return again
        match decision:
            case Continue(turn=turn, fresh=True):
                await self.book.log(task, f"{outcome.error_message}; starting a new session")
                task.options["session_lost"] = True
                task.session_id = None
                return NextTurn(fresh_prompt(task, turn_of(task)), "resume")
            case Continue(turn=turn):
                return turn
            case Settle():
                await self._settle_as(task, decision)
            case RateLimited(resets_at=resets_at, message=message):
                await self._rate_limited(task, resets_at, message)
            case Ask(question=question):
                task.summary = outcome.answer
                await self.book.move(task, S.NEEDS_INPUT, question)
            case Inspect(stopped=stopped):
                task.summary = outcome.answer
                return await self._inspect(task, stopped)
        return None

    async def _inspect(self, task: Task, stopped: str = "") -> NextTurn | None:
        # A read-only task (baton ask) answers: what its checkout holds is dropped unread.
        read_only = bool(task.options.get("read_only"))
        files = [] if read_only else await self.drafts.compute(task, final=True)
        if stopped:  # by a budget: what it did so far is reviewed as it is
            record_evidence(task, [], files)
            task.options["evidence"]["unchecked"] = [f"no checks were run: {stopped}"]
            if files:
                await tell_result(self.book, self.drafts, task)
            await self._settle_as(task, after_budget(bool(files), stopped))
            return None
        verify = not read_only and bool(checks_of(task) or reviewer_of(task))
        after = after_changes(bool(files), verify=verify)
        if isinstance(after, Settle):
            record_evidence(task, [], files)
            await tell_result(self.book, self.drafts, task)  # before the move that ends it
            await self._settle_as(task, after)
            return None
        result = await self.verifier.verify(task, await self._reasons(task))
        if isinstance(result, NextTurn):
            return result
        await tell_result(self.book, self.drafts, task)
        await self._settle_as(task, result)
        return None

    async def _settle_as(self, task: Task, decision: Settle) -> None:
        await self.book.move(task, decision.state, decision.message, decision.completion)
        if decision.state == S.ANSWERED:
            await self.preparer.cleanup(task)

    async def _over_budget(self, task: Task) -> bool:
        """Refuse the turn when a cap or a daily budget is reached; True if refused."""
        assert self.budgets is not None
        found = await self.budgets.admit(task)
        if found is None:
            return False
        await self.book.move(task, S.FAILED, found.message, Completion.BUDGET)
        return True

    async def _stop_if_cancelled(self, task: Task) -> bool:
        """Honour a cancel that came between steps; True if the task is now cancelled."""
        if task.id not in self.book.cancelling:
            return False
        self.book.cancelling.discard(task.id)
        await self.book.move(task, S.CANCELLED, "cancelled by the user", Completion.CANCELLED)
        return True

    async def _reasons(self, task: Task) -> list[str]:
        attempts = await self.book.store.call(lambda s: s.attempts(task.id))
        return [a.reason for a in attempts]

    @staticmethod
    def _cap(task: Task) -> int:
        return int(task.options.get("max_attempts") or DEFAULT_MAX_ATTEMPTS)

    # ------------------------------------------------------------------ rate limits

    async def _rate_limited(self, task: Task, resets_at: float, message: str) -> None:
        reasons = await self._reasons(task)
        await self.book.store.call(
            accounts.record_cooldown, task.worker, task.provider, resets_at, message[:500], task.id
        )
        if out_of_attempts(reasons, self._cap(task)):
            await self._settle_as(task, gave_up(reasons, message))
            return
        task.resets_at = resets_at
        await self.book.move(task, S.RATE_LIMITED, message, Completion.RATE_LIMIT)
        if not await self.hand_off(task, "rate limited"):
            self.hold(task)

    def hold(self, task: Task) -> None:
        """Wait out the task's rate limit, then continue its session on the same worker."""
        delay = max(0.0, (task.resets_at or time.time()) - time.time())

        def requeue() -> None:
            self._timers.pop(task.id, None)
            self._spawn(self._resume_after_reset(task), f"reset {task.id}")

        self.cancel_timer(task.id)
        self._timers[task.id] = asyncio.get_running_loop().call_later(delay, requeue)

    def start_later(self, task: Task, at: float) -> None:
        """Start a queued task once its worker's cool-down is over (cancel drops the timer)."""

        def start() -> None:
            self._timers.pop(task.id, None)
            self.start(task, NextTurn(task.brief, "first"))

        self.cancel_timer(task.id)
        self._timers[task.id] = asyncio.get_running_loop().call_later(
            max(0.0, at - time.time()), start
        )

    async def _resume_after_reset(self, task: Task) -> None:
        async with self.book.lock(task.id):
            if task.state != S.RATE_LIMITED:
                return
            await self.book.move(task, S.QUEUED, "rate limit reset")
        prompt = "Continue." if task.session_id else task.brief
        await self.drive(task, NextTurn(prompt, "retry"))

    def cancel_timer(self, task_id: str) -> None:
        handle = self._timers.pop(task_id, None)
        if handle is not None:
            handle.cancel()

    async def hand_off(
        self, task: Task, why: str, worker: str | None = None, automatic: bool = True
    ) -> bool:
        """Move ``task`` to the next allowed worker and start it there; False to hold."""
        settings = self.settings.last_good(task.root)
        if settings is None:
            return False
        cooling, evidence = await self._availability()
        live = await live_per_group(self.book, settings)
        try:
            route = handoff_route(
                settings,
                task,
                cooling=cooling,
                evidence=evidence,
                worker=worker,
                automatic=automatic,
                live=live,
            )
        except RoutingError as exc:
            raise TaskError(str(exc)) from None
        if route is None or (route.worker == task.worker and route.model == task.model):
            return False
        before = task.worker
        profile = settings.profiles[route.worker]
        task.worker, task.provider, task.model = profile.name, profile.provider, route.model
        store_profile(task, profile)
        task.session_id = None  # another account cannot resume this one's session
        task.options.pop("transport", None)
        task.route_reason = f"{task.route_reason}; {why}: {before} → {route.reason}"
        task.completion, task.message, task.resets_at = None, "", None
        self.cancel_timer(task.id)
        await self.book.move(task, S.QUEUED, f"{why}: {before} → {profile.name}")
        self.start(task, NextTurn(task.brief, "handoff"))
        return True

    def close(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        self.preparer.refills.close(timeout=0)  # no more pool refills (one under way ends)
