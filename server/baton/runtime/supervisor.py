"""The supervisor: owns tasks from delegate to settle.

``delegate`` records the task and returns at once; snapshot, worktree and the agent run in the
background. Each worker (profile) has a concurrency cap; tasks beyond it wait in ``queued``.
Agents run detached, so closing the broker never kills work: the next broker adopts it.
Every state change goes through :func:`baton.core.lifecycle.transition`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import sys
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil

from baton.acp import transport as acp
from baton.agents.base import Adapter, AgentNotFound, Parser, Turn
from baton.core.outcome import Outcome
from baton.agents.registry import adapter_for
from baton.config.layers import ConfigError
from baton.config.profiles import Profile, default_profiles
from baton.config.secrets import SecretError, redact, resolve_env, use_backend
from baton.config.settings import Settings
from baton.config.watch import SettingsCache
from baton.core.brief import BriefParts, Selection, build_brief, title_of
from baton.core.diff import FileDiff, HunkState, count_lines, with_states
from baton.core.events import Event, EventType
from baton.core.lifecycle import SETTLED, Completion, TaskState, transition
from baton.core.review import REQUEST_CHANGES, Verdict, parse_verdict, review_brief
from baton.core.review import repair_brief as review_repair_brief
from baton.core.routing import RoutingError
from baton.core.task import Attempt, Task, new_task_id
from baton.process import spawn as runner
from baton.process.tail import Tailer
from baton.runtime import accounts
from baton.runtime import routing as routes
from baton.runtime.bus import EventBus, Subscription
from baton.runtime.checks import Check, CheckResult, repair_prompt, run_check
from baton.runtime.checks import summary as checks_summary
from baton.runtime.proposals import Proposal, final_text, proposal_diff, read_current
from baton.runtime.requests import DelegateRequest, GraphNode
from baton.store import AsyncStore, Store, UnknownTask
from baton.store.paths import task_dir, worktrees_dir
from baton.workspace import (
    AcceptResult,
    Snapshot,
    accept,
    compute_diff,
    create_worktree,
    remove_worktree,
    run_git,
    sweep_orphans,
    take_snapshot,
)
from baton.workspace.git import in_background

log = logging.getLogger(__name__)

S = TaskState
#: States in which an agent process may be running for the task.
_LIVE = frozenset({S.PREPARING, S.RUNNING, S.VERIFYING})
#: How long a read of the outcome ledger (which only breaks routing ties) is reused.
_EVIDENCE_TTL = 5.0
#: A prerequisite in one of these states lets its dependents start...
_SATISFIED = frozenset({S.APPLIED, S.ANSWERED})
#: ...and in one of these, cancels them.
_BLOCKING = frozenset({S.REJECTED, S.FAILED, S.CANCELLED})
#: States a broker must keep an eye on (timers, queue, processes).
_OWNED = frozenset({S.QUEUED, S.PREPARING, S.RUNNING, S.VERIFYING, S.RATE_LIMITED})


class TaskError(Exception):
    """A request that cannot be done in the task's current state (the message says what can)."""


@dataclasses.dataclass
class Limits:
    stall_after: float = 300.0  # no output for this long → stalled
    wall_clock: float = 3600.0  # an attempt may run this long → timeout
    kill_grace: float = 3.0
    draft_debounce: float = 0.2
    poll: float = 0.05


@dataclasses.dataclass
class _Live:
    """An attempt this broker is following."""

    task: Task
    attempt: Attempt
    adapter: Adapter
    tailer: Tailer
    outcome: Outcome
    started: float
    last_output: float
    parser: Parser
    side: bool = False  # a side attempt (review): it must not touch the task's session
    stop: Completion | None = None
    stop_message: str = ""


def broker_id() -> str:
    """``pid:create_time`` — unique even when pids are reused."""
    return f"{os.getpid()}:{psutil.Process().create_time():.3f}"


def broker_alive(owner: str | None) -> bool:
    if not owner:
        return False
    try:
        pid_s, created_s = owner.split(":", 1)
        proc = psutil.Process(int(pid_s))
        same = abs(float(proc.create_time()) - float(created_s)) < 0.01
        return same and proc.status() != psutil.STATUS_ZOMBIE
    except (ValueError, psutil.Error):
        return False


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
        self._secrets: dict[str, list[str]] = {}  # task id → secret values its agent got
        self.limits = limits or Limits()
        self.id = broker_id()
        self._adopt = adopt
        self.store = AsyncStore(Store(home / "baton.db"))
        self.bus = EventBus(self.store)
        self._live: dict[str, _Live] = {}
        self._tasks: dict[str, Task] = {}  # tasks this broker owns
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._drafts: dict[str, asyncio.TimerHandle] = {}
        self._diff_locks: dict[str, asyncio.Lock] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        # Tasks whose latest state could not be written (e.g. a full disk): kept here, shown
        # by get(), and written again by the tick until the store takes them.
        self._unsaved: dict[str, tuple[Task, str | None]] = {}
        self._deferred: dict[str, DelegateRequest] = {}  # tasks waiting on prerequisites
        self._proposals: dict[str, Proposal] = {}  # proposals this broker waits to answer
        self._cancelling: set[str] = set()  # cancelled between steps; stopped at the next
        self._evidence_cache: tuple[float, routes.EvidenceMap] | None = None
        # ACP permission requests waiting for the user: task id → permission id → request.
        self._asking: dict[str, dict[str, dict[str, Any]]] = {}
        self._launching = 0
        self._no_launch = asyncio.Event()
        self._no_launch.set()
        self._closed = False

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
            await self._sweep_if_alone()
            await self.adopt()
        self._spawn(self._tick(), "tick")

    async def _tick(self) -> None:
        """Once a second: reap ended wrappers, heartbeat, retry unsaved task states."""
        while not self._closed:
            await asyncio.sleep(1.0)
            runner.reap()
            with contextlib.suppress(Exception):
                await self.store.call(Store.heartbeat, self.id)
            if self._deferred:
                with contextlib.suppress(Exception):
                    await self._release_dependents()
            for task_id, (task, owner) in list(self._unsaved.items()):
                try:
                    await self.store.call(_save_task, task, owner)
                except Exception:
                    break
                if self._unsaved.get(task_id, (None, None))[0] is task:
                    del self._unsaved[task_id]

    async def _sweep_if_alone(self) -> None:
        """Remove worktrees and branches left by tasks that no longer need them.

        Only when no other broker runs (another one could be creating a worktree right now).
        Worktrees of failed, cancelled and interrupted tasks are kept: retry resumes them.
        """
        brokers = await self.store.call(lambda s: s.live_brokers(max_age=float("inf")))
        if any(b.id != self.id and broker_alive(b.id) for b in brokers):
            return
        cleanable = {str(S.APPLIED), str(S.REJECTED), str(S.ANSWERED)}
        keep_states = [str(x) for x in TaskState if str(x) not in cleanable]
        keep: list[Task] = await self.store.call(
            lambda s: s.list_tasks(states=keep_states, limit=None)
        )
        try:
            removed = await asyncio.to_thread(
                in_background,
                sweep_orphans,
                self.home,
                worktrees_dir(self.home),
                {t.id for t in keep},
            )
        except Exception as exc:
            log.warning("could not sweep old worktrees: %s", exc)
            return
        if removed:
            log.info("removed worktrees of %d settled or unknown tasks", len(removed))

    async def close(self) -> None:
        """Stop following; running agents keep running and the next broker adopts them."""
        self._closed = True
        for handle in [*self._drafts.values(), *self._timers.values()]:
            handle.cancel()
        for task_id in list(self._proposals):  # nobody will answer them now
            with contextlib.suppress(Exception):
                await self.withdraw(task_id, "the broker that held it stopped")
        # Let agents being started get their attempt recorded first.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._no_launch.wait(), 10.0)
        for live in list(self._live.values()):
            live.tailer.finish()
        for t in list(self._background):
            t.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        for task_id in list(self._tasks):
            await self.store.call(Store.set_owner, task_id, None)
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

    # ------------------------------------------------------------------ requests

    async def delegate(self, req: DelegateRequest) -> Task:
        """Record the task and return it at once; the work starts in the background."""
        root = str(Path(req.root).resolve())
        settings = self._settings(root)
        cooling, evidence = await self._availability()
        try:
            route = routes.decide(settings, req, cooling=cooling, evidence=evidence)
        except RoutingError as exc:
            raise TaskError(str(exc)) from None
        profile = settings.profiles[route.worker]
        now = time.time()
        task = Task(
            id=new_task_id(now),
            instruction=req.instruction,
            root=root,
            title=req.title or title_of(req.instruction),
            action=req.action,
            kind=route.kind,
            targets=list(req.targets),
            scope=list(req.scope),
            worker=profile.name,
            provider=profile.provider,
            model=route.model,
            route_reason=route.reason,
            group=req.group,
            options={**_project_options(settings, route.kind), **req.options},
            created_at=now,
            updated_at=now,
        )
        task.options["route"] = routes.route_record(req, route)
        try:
            _checks_of(task)
        except ValueError as exc:
            raise TaskError(str(exc)) from None
        if req.depends_on:
            task.options["depends_on"] = await self._resolve_ids(req.depends_on)
        self._tasks[task.id] = task
        await self.store.call(lambda s: s.insert_task(_copy(task), owner=self.id))
        waits = " after " + ", ".join(task.options["depends_on"]) if req.depends_on else ""
        # The task is durable now; its first event is committed with the next batch.
        first = self.bus.emit_nowait([_state_event(task.id, None, S.QUEUED, "delegated" + waits)])
        first.add_done_callback(_log_if_failed)
        if req.depends_on:
            self._deferred[task.id] = req
            self._spawn(self._release_dependents(), f"dependents of {task.id}")
        elif route.hold_until is not None:
            await self._log(task, f"waiting: {route.reason}")
            self._start_later(task, req, route.hold_until)
        else:
            self._spawn(self._prepare_and_run(task, req), f"task {task.id}")
        return task

    def _start_later(self, task: Task, req: DelegateRequest, at: float) -> None:
        """Start a queued task once its worker's cool-down is over (cancel drops the timer)."""

        def start() -> None:
            self._timers.pop(task.id, None)
            self._spawn(self._prepare_and_run(task, req), f"task {task.id}")

        self._cancel_timer(task.id)
        delay = max(0.0, at - time.time())
        self._timers[task.id] = asyncio.get_running_loop().call_later(delay, start)

    async def handoff(self, task_id: str, worker: str | None = None) -> Task:
        """Hand a failed, cancelled, interrupted or rate-limited task to another worker.

        The task keeps its id, worktree, events and attempts; the new worker starts a fresh
        session with the brief. Without ``worker``, the project's routing picks the next one.
        """
        task = await self._owned_or_adopt(task_id)
        _not_a_proposal(task, "handoff")
        async with self._lock(task.id):
            handable = (S.FAILED, S.CANCELLED, S.INTERRUPTED, S.RATE_LIMITED)
            if task.state not in handable:
                raise TaskError(
                    f"task {task.id} is {task.state}; handoff is for failed, cancelled, "
                    "interrupted or rate-limited tasks"
                )
            if not await self._hand_off(task, "handed off by the user", worker, automatic=False):
                raise TaskError(f"no other worker may take task {task.id}")
            return task

    async def _hand_off(
        self, task: Task, why: str, worker: str | None = None, automatic: bool = True
    ) -> bool:
        """Move ``task`` to the next allowed worker and start it there; False to hold."""
        settings = self.settings.last_good(task.root)
        if settings is None:
            return False
        cooling, evidence = await self._availability()
        try:
            route = routes.handoff_route(
                settings,
                task,
                cooling=cooling,
                evidence=evidence,
                worker=worker,
                automatic=automatic,
            )
        except RoutingError as exc:
            raise TaskError(str(exc)) from None
        if route is None or (route.worker == task.worker and route.model == task.model):
            return False
        before = task.worker
        profile = settings.profiles[route.worker]
        task.worker, task.provider, task.model = profile.name, profile.provider, route.model
        task.session_id = None  # another account cannot resume this one's session
        task.route_reason = f"{task.route_reason}; {why}: {before} → {route.reason}"
        task.completion, task.message, task.resets_at = None, "", None
        self._cancel_timer(task.id)
        await self._move(task, S.QUEUED, f"{why}: {before} → {profile.name}")
        self._spawn(self._run_queued(task, "handoff", task.brief), f"handoff {task.id}")
        return True

    async def _availability(self) -> tuple[dict[str, float], routes.EvidenceMap]:
        """Running cool-downs (worker → until) and the evidence ledger, in one store call.

        Cool-downs are read every time (a small table); the ledger, an aggregate that only
        breaks ties, at most every ``_EVIDENCE_TTL`` seconds.
        """
        now = time.monotonic()
        cached = self._evidence_cache
        fresh = cached is not None and now - cached[0] < _EVIDENCE_TTL

        def read(store: Store) -> tuple[dict[str, float], routes.EvidenceMap | None]:
            cooling = {w: c.until for w, c in accounts.cooldowns(store).items()}
            return cooling, None if fresh else accounts.evidence(store)

        cooling, evidence = await self.store.call(read)
        if evidence is None and cached is not None:
            evidence = cached[1]
        else:
            assert evidence is not None
            self._evidence_cache = (now, evidence)
        return cooling, evidence

    def profiles_for(self, root: str | Path) -> dict[str, Profile]:
        """The workers a task delegated in ``root`` may name (the project's own included)."""
        settings = self.settings.last_good(root)
        return {**self.profiles, **(settings.profiles if settings is not None else {})}

    def _settings(self, root: str) -> Settings:
        try:
            return self.settings.get(root)
        except ConfigError as exc:
            raise TaskError(f"Baton's settings: {exc}") from None

    async def delegate_graph(self, nodes: Sequence[GraphNode]) -> dict[str, Task]:
        """Delegate a small graph in one call: each node starts once the nodes it comes
        ``after`` are accepted. Returns key → task. Cycles and unknown keys are refused."""
        by_key = {n.key: n for n in nodes}
        if len(by_key) != len(nodes):
            raise TaskError("graph node keys must be unique")
        for n in nodes:
            unknown = [k for k in n.after if k not in by_key]
            if unknown:
                raise TaskError(f"node {n.key!r} comes after unknown node(s) {unknown}")
        order: list[GraphNode] = []
        state: dict[str, int] = {}  # 1 visiting, 2 done

        def visit(key: str, path: tuple[str, ...]) -> None:
            if state.get(key) == 2:
                return
            if state.get(key) == 1:
                raise TaskError("the graph has a cycle: " + " → ".join((*path, key)))
            state[key] = 1
            for dep in by_key[key].after:
                visit(dep, (*path, key))
            state[key] = 2
            order.append(by_key[key])

        for n in nodes:
            visit(n.key, ())
        created: dict[str, Task] = {}
        for n in order:
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

    async def _resolve_ids(self, ids: Sequence[str]) -> list[str]:
        out = []
        for i in ids:
            out.append(await self.store.call(Store.resolve_id, i))
        return out

    async def _release_dependents(self) -> None:
        """Start waiting tasks whose prerequisites were all accepted; cancel those whose
        prerequisites were rejected or failed."""
        for task_id, req in list(self._deferred.items()):
            task = self._tasks.get(task_id)
            if task is None or task.state != S.QUEUED:
                self._deferred.pop(task_id, None)
                continue
            deps = list(task.options.get("depends_on") or [])
            states = {d: (await self.store.call(Store.get_task, d)).state for d in deps}
            blocked = {d: st for d, st in states.items() if st in _BLOCKING}
            ready = all(st in _SATISFIED for st in states.values())
            if (blocked or ready) and self._deferred.pop(task_id, None) is None:
                continue  # another pass (tick or event) took it meanwhile
            if blocked:
                why = ", ".join(f"{d} is {st}" for d, st in blocked.items())
                await self._move(
                    task, S.CANCELLED, f"prerequisite not accepted: {why}", Completion.CANCELLED
                )
            elif ready:
                await self._log(task, "prerequisites accepted: " + ", ".join(deps))
                self._spawn(self._prepare_and_run(task, req), f"task {task.id}")

    async def _close_group(self, winner: Task) -> None:
        """A compared task was accepted: reject the others still in review, cancel the rest."""
        members: list[Task] = await self.store.call(
            lambda s: s.list_tasks(group=winner.group, limit=None)
        )
        for other in members:
            if other.id == winner.id:
                continue
            try:
                if other.state == S.REVIEW:
                    files, _ = await self.diff(other.id)
                    if not any(h.state == HunkState.ACCEPTED for f in files for h in f.hunks):
                        await self.reject(other.id)
                elif other.state not in SETTLED:
                    await self.cancel(other.id)
            except (TaskError, UnknownTask) as exc:
                await self._log(other, f"could not close the comparison: {exc}", "warning")

    async def cancel(self, task_id: str) -> Task:
        task = await self._owned_or_adopt(task_id)
        async with self._lock(task.id):
            live = self._live.get(task.id)
            if live is not None:
                live.stop, live.stop_message = Completion.CANCELLED, "cancelled by the user"
                await self._interrupt(live)
                return task
            if task.state in (S.QUEUED, S.NEEDS_INPUT, S.RATE_LIMITED, S.INTERRUPTED):
                self._cancel_timer(task.id)
                await self._move(task, S.CANCELLED, "cancelled by the user", Completion.CANCELLED)
                return task
            if task.state in (S.PREPARING, S.RUNNING, S.VERIFYING):
                # Between steps (snapshot, starting the agent, checks): the work stops at
                # its next step, which moves the task to cancelled.
                self._cancelling.add(task.id)
                return task
            raise TaskError(f"task {task.id} is {task.state}: nothing to cancel")

    async def reply(self, task_id: str, text: str) -> Task:
        """Answer a question (needs_input) or ask for changes (review): resumes the session."""
        task = await self._owned_or_adopt(task_id)
        _not_a_proposal(task, "reply")
        async with self._lock(task.id):
            if task.state not in (S.NEEDS_INPUT, S.REVIEW):
                raise TaskError(
                    f"task {task.id} is {task.state}; reply is for needs_input or review"
                    + ("; use steer while it runs" if task.state == S.RUNNING else "")
                )
            if task.id in self._live:
                raise TaskError(
                    f"task {task.id} asks permission; answer it (baton answer), or cancel"
                )
            await self._start_attempt(task, text, "reply")
            return task

    async def steer(self, task_id: str, text: str) -> Task:
        """Interrupt the running attempt and continue the same session with new guidance."""
        task = await self._owned_or_adopt(task_id)
        async with self._lock(task.id):
            live = self._live.get(task.id)
            if task.state != S.RUNNING or live is None:
                raise TaskError(
                    f"task {task.id} is {task.state}; steer is for running tasks"
                    + ("; use reply" if task.state in (S.NEEDS_INPUT, S.REVIEW) else "")
                )
            live.stop, live.stop_message = Completion.CANCELLED, f"steer: {text}"
            await self._interrupt(live)
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

    async def retry(self, task_id: str) -> Task:
        task = await self._owned_or_adopt(task_id)
        _not_a_proposal(task, "retry")
        async with self._lock(task.id):
            if task.state not in (S.FAILED, S.CANCELLED, S.INTERRUPTED, S.ANSWERED):
                raise TaskError(f"task {task.id} is {task.state}; retry is for settled tasks")
            await self._move(task, S.QUEUED, "retry")
            task.completion, task.message = None, ""
            self._spawn(self._run_queued(task, "retry"), f"retry {task.id}")
            return task

    async def get(self, task_id: str) -> Task:
        tid = await self.store.call(lambda s: s.resolve_id(task_id))
        if tid in self._unsaved:
            return self._unsaved[tid][0]
        if tid in self._tasks:
            return self._tasks[tid]
        task: Task = await self.store.call(lambda s: s.get_task(tid))
        return task

    async def list_tasks(self, **filters: Any) -> list[Task]:
        tasks: list[Task] = await self.store.call(lambda s: s.list_tasks(**filters))
        return [self._tasks.get(t.id, t) for t in tasks]

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

        def load(s: Store) -> tuple[list[FileDiff], bool]:
            found = s.load_diff(task.id)
            if found is None:
                return [], False
            files, final = found
            return with_states(files, s.hunk_states(task.id)), final

        result: tuple[list[FileDiff], bool] = await self.store.call(load)
        return result

    async def accept(
        self,
        task_id: str,
        hunk_ids: Sequence[str] | None = None,
        *,
        current: Mapping[str, str] | None = None,
        write: bool = True,
        applied_by_client: Callable[[AcceptResult], Coroutine[Any, Any, bool]] | None = None,
    ) -> AcceptResult:
        """Apply all pending hunks, or the chosen ones, to the user's files.

        With ``write=False`` nothing is written: the caller (the language server) applies
        ``result.texts`` as editor edits and reports back through ``applied_by_client``.
        """
        task = await self.get(task_id)
        async with self._lock(task.id):
            task = await self._fresh(task.id)
            if task.state != S.REVIEW:
                raise TaskError(f"task {task.id} is {task.state}; accept is for tasks in review")
            files, _ = await self.diff(task.id)
            pending = {h.id for f in files for h in f.hunks if h.state == HunkState.PENDING}
            chosen = _resolve_hunks(files, hunk_ids) if hunk_ids else pending
            not_pending = chosen - pending
            if not_pending:
                raise TaskError(f"hunks already decided: {', '.join(sorted(not_pending))}")
            if task.options.get("proposal"):
                return await self._accept_proposal(task, files, chosen, current)
            snap = _snapshot_of(task)
            result = await asyncio.to_thread(
                accept, snap, files, chosen, scope=task.scope, current=current, write=write
            )
            if (
                applied_by_client is not None
                and result.applied
                and not await applied_by_client(result)
            ):
                return dataclasses.replace(result, applied=[])
            await self._decide(task, dict.fromkeys(result.applied, HunkState.ACCEPTED))
            return result

    async def reject(self, task_id: str, hunk_ids: Sequence[str] | None = None) -> list[str]:
        task = await self.get(task_id)
        async with self._lock(task.id):
            task = await self._fresh(task.id)
            if task.state != S.REVIEW:
                raise TaskError(f"task {task.id} is {task.state}; reject is for tasks in review")
            self._held_proposal(task)
            files, _ = await self.diff(task.id)
            pending = {h.id for f in files for h in f.hunks if h.state == HunkState.PENDING}
            chosen = _resolve_hunks(files, hunk_ids) if hunk_ids else pending
            chosen &= pending
            await self._decide(task, dict.fromkeys(chosen, HunkState.REJECTED))
            return sorted(chosen)

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
        """Record an edit another tool proposes (see :mod:`baton.runtime.proposals`).

        ``file`` (absolute, inside ``root``) would go from ``base`` (its text now; None for
        a new file) to ``new``. Returns the task, in review, and a future that resolves with
        the final contents once every hunk is decided (None: rejected). An unchanged file
        resolves at once with ``new``. Nothing is ever written by Baton for a proposal.
        """
        file, top = Path(file).resolve(), Path(root).resolve()
        rel_root = file.relative_to(top).as_posix()  # raises ValueError outside the root
        now = time.time()
        task = Task(
            id=new_task_id(now),
            instruction=title,
            root=str(top),
            title=title,
            worker=source,
            provider=source,
            state=S.RUNNING,
            isolation="none",
            route_reason=f"proposed by {source}",
            options={"proposal": {"broker": self.id, "file": str(file), **(meta or {})}},
            created_at=now,
            updated_at=now,
        )
        await self.store.call(lambda s: s.insert_task(_copy(task), owner=self.id))
        await self.bus.emit([_state_event(task.id, None, S.RUNNING, f"proposed by {source}")])
        decided: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        try:
            overlays = {rel_root: base} if base is not None else None
            snap = await asyncio.to_thread(
                take_snapshot, top, task.id, overlays=overlays, state_home=self.home
            )
            task.snapshot, task.base_ref = snap.commit, snap.base
            task.options["snapshot"] = snap.to_json()
            path = file.relative_to(snap.root).as_posix()
            files = proposal_diff(path, base, new)
            await self._record_diff(task, files, final=True)
        except asyncio.CancelledError:  # the proposer gave up while it was being recorded
            await asyncio.shield(self._move(task, S.CANCELLED, "withdrawn by its proposer"))
            raise
        except Exception as exc:
            await self._move(task, S.FAILED, f"could not record the proposal: {exc}")
            raise TaskError(f"could not record the proposal: {exc}") from exc
        if not files:
            await self._move(
                task, S.ANSWERED, "the proposal changes nothing", Completion.NO_CHANGES
            )
            decided.set_result(new)
            return task, decided
        self._proposals[task.id] = Proposal(task.id, path, file, base, new, decided)
        await self._move(task, S.REVIEW, f"proposed changes to {path}", Completion.COMPLETED)
        return task, decided

    async def withdraw(self, task_id: str, reason: str) -> None:
        """The proposer no longer waits (it was answered elsewhere, or went away)."""
        proposal = self._proposals.pop(task_id, None)
        if proposal is None:
            return
        if not proposal.decided.done():
            proposal.decided.cancel()
        async with self._lock(task_id):
            task = await self._fresh(task_id)
            if task.state == S.REVIEW:
                await self._move(task, S.CANCELLED, reason)

    def _held_proposal(self, task: Task) -> Proposal | None:
        if not task.options.get("proposal"):
            return None
        proposal = self._proposals.get(task.id)
        if proposal is None:
            raise TaskError(
                f"task {task.id} is a proposal another broker is waiting to answer: decide it "
                "in the editor that shows it"
            )
        return proposal

    async def _accept_proposal(
        self,
        task: Task,
        files: Sequence[FileDiff],
        chosen: set[str],
        current: Mapping[str, str] | None,
    ) -> AcceptResult:
        """Accept hunks of a proposal: nothing is written; they are merged when answering.

        A hunk that no longer fits the file as it is now (on disk, or in the editor's buffer
        when that has unsaved edits: the proposer will write the file) stays pending.
        """
        proposal = self._held_proposal(task)
        assert proposal is not None
        on_disk = await asyncio.to_thread(read_current, proposal.file)
        unsaved = (current or {}).get(proposal.path)
        if unsaved is not None and unsaved != on_disk:
            why = f"{proposal.path} has unsaved edits in the editor: save them, then accept"
            return AcceptResult(conflicts=[(h, why) for h in sorted(chosen)])
        accepted = [
            h for f in files for h in f.hunks if h.state == HunkState.ACCEPTED or h.id in chosen
        ]
        text, conflicts = await asyncio.to_thread(final_text, proposal, accepted, on_disk)
        clash = {h for h, _ in conflicts}
        result = AcceptResult(
            applied=sorted(chosen - clash),
            conflicts=[(h, why) for h, why in conflicts if h in chosen],
        )
        if text is not None and result.applied:
            result.texts[proposal.path] = text
        await self._decide(task, dict.fromkeys(result.applied, HunkState.ACCEPTED))
        return result

    async def _answer_proposal(self, task: Task, files: Sequence[FileDiff]) -> None:
        """Every hunk is decided: give the proposer the final contents, or the rejection."""
        proposal = self._proposals.pop(task.id)
        accepted = [h for f in files for h in f.hunks if h.state == HunkState.ACCEPTED]
        on_disk = await asyncio.to_thread(read_current, proposal.file)
        text, conflicts = await asyncio.to_thread(final_text, proposal, accepted, on_disk)
        for hid, why in conflicts:
            await self._log(task, f"hunk {hid} left out: {why}", "warning")
        if text is None:
            await self._move(task, S.REJECTED, "rejected", task.completion)
        else:
            await self._move(task, S.APPLIED, f"accepted: {task.worker} writes it", task.completion)
        if not proposal.decided.done():
            proposal.decided.set_result(text)

    async def _withdraw_orphans(self) -> None:
        """Proposals in review whose broker is gone: nobody waits for their answer now."""
        found = await self.store.call(lambda s: s.list_tasks(states=[str(S.REVIEW)], limit=10_000))
        for task in found:
            meta = task.options.get("proposal")
            if not isinstance(meta, dict) or task.id in self._proposals:
                continue
            broker = meta.get("broker")
            if broker == self.id or (isinstance(broker, str) and broker_alive(broker)):
                continue
            async with self._lock(task.id):
                fresh = await self._fresh(task.id)
                if fresh.state == S.REVIEW:
                    await self._move(fresh, S.CANCELLED, "its proposer is gone (broker ended)")

    # ------------------------------------------------------------------ the work

    async def _prepare_and_run(self, task: Task, req: DelegateRequest) -> None:
        slot = self._slot(task.worker, task.root)
        async with slot:
            if task.state != S.QUEUED:
                return
            await self._move(task, S.PREPARING, "taking a snapshot")
            try:
                await self._prepare(task, req)
            except Exception as exc:
                log.warning("task %s: preparing failed: %s", task.id, exc)
                await self._move(
                    task, S.FAILED, f"could not prepare: {exc}", Completion.WORKER_ERROR
                )
                return
            if await self._stop_if_cancelled(task):
                return
            await self._begin(task, task.brief, "first")
        # The slot is held by the attempt itself from here (see _begin).

    async def _prepare(self, task: Task, req: DelegateRequest) -> None:
        settings = self.settings.last_good(task.root)
        tdir = task_dir(self.home, task.id)
        tdir.mkdir(parents=True, exist_ok=True)
        memory = await self.store.call(lambda s: s.list_memory(task.root))
        snap = await asyncio.to_thread(
            in_background,
            take_snapshot,
            Path(task.root),
            task.id,
            overlays=req.overlays,
            state_home=self.home,
        )
        task.snapshot, task.base_ref = snap.commit, snap.base
        task.options["snapshot"] = snap.to_json()
        worktree = await asyncio.to_thread(
            in_background, create_worktree, snap, task.id, worktrees_dir(self.home)
        )
        task.worktree, task.branch = str(worktree), snap.branch
        selection = None
        if req.targets and req.targets[0].start_line is not None:
            t = req.targets[0]
            text = await asyncio.to_thread(_read_text, worktree / snap.prefix / t.path)
            lines = text.splitlines(keepends=True)
            start, end = t.start_line or 1, t.end_line or t.start_line or 1
            selection = Selection(t.path, start, end, "".join(lines[start - 1 : end]))
        task.brief = build_brief(
            BriefParts(
                instruction=req.instruction,
                action=req.action,
                selection=selection,
                diagnostics=req.diagnostics,
                memory=[text for _, text in memory],
                rules=settings.brief_rules if settings else (),
                scope=req.scope,
            )
        )
        for note in snap.notes:
            await self._log(task, note)
        await self._save(task)

    def _slot(self, worker: str, root: str | None = None) -> asyncio.Semaphore:
        if worker not in self._slots:
            cap = self._profile(worker, root).concurrency
            self._slots[worker] = asyncio.Semaphore(max(1, cap))
        return self._slots[worker]

    async def _run_queued(self, task: Task, reason: str, prompt: str | None = None) -> None:
        async with self._slot(task.worker, task.root):
            if task.state != S.QUEUED:
                return
            if not task.worktree or not Path(task.worktree).exists():
                await self._move(
                    task, S.FAILED, "its worktree is gone; delegate again", Completion.WORKER_ERROR
                )
                return
            await self._move(task, S.PREPARING, reason)
            await self._begin(task, prompt if prompt is not None else task.brief, reason)

    async def _start_attempt(self, task: Task, prompt: str, reason: str) -> None:
        """A follow-up turn (reply) for a task that has no process running."""
        await self._move(task, S.RUNNING, reason)
        self._spawn(self._follow_up(task, prompt, reason), f"{reason} {task.id}")

    async def _follow_up(self, task: Task, prompt: str, reason: str) -> None:
        async with self._slot(task.worker, task.root):
            await self._launch(task, prompt, reason)

    async def _begin(self, task: Task, prompt: str, reason: str) -> None:
        await self._launch(task, prompt, reason)

    async def _launch(self, task: Task, prompt: str, reason: str) -> None:
        """Start one attempt and follow it to the end (holding the caller's slot)."""
        profile = self._profile(task.worker, task.root)
        try:
            adapter = self._adapter_for(task, profile)
        except ValueError as exc:
            await self._move(task, S.FAILED, str(exc), Completion.WORKER_ERROR)
            return
        tdir = task_dir(self.home, task.id)
        turn = Turn(
            task_id=task.id,
            prompt=prompt,
            cwd=_agent_cwd(task),
            reason=reason,
            session_id=task.session_id if reason != "first" else None,
            model=task.model,
            files=tuple(t.path for t in task.targets),
            scope=tuple(task.scope),
            task_dir=str(tdir),
        )
        attempt = await self._start_process(task, profile, adapter, turn, reason)
        if attempt is None:
            return
        if task.state != S.RUNNING:
            await self._move(task, S.RUNNING, f"{profile.name} started")
        await self._follow(task, attempt, adapter, Outcome())

    def _adapter_for(self, task: Task, profile: Profile) -> Adapter:
        """The task's transport: chosen for a new session, then kept for its whole life."""
        chosen = task.options.get("transport") if task.session_id else None
        if chosen not in (acp.ACP, acp.NATIVE):
            chosen, why = acp.choose(profile, self.home)
            task.options["transport"], task.options["transport_reason"] = chosen, why
        if chosen == acp.ACP:
            return acp.AcpAdapter(profile.provider)
        return adapter_for(profile.provider)

    async def _interrupt(self, live: _Live) -> None:
        """Stop the running turn: over ACP a ``session/cancel`` that keeps the session (and
        its process), otherwise — or if the runner does not answer — a kill."""
        tdir = task_dir(self.home, live.task.id)
        if live.attempt.transport == acp.ACP and await acp.cancel_turn(tdir):
            return
        await runner.kill_tree(live.attempt.pid or 0, self.limits.kill_grace)

    def _track_permission(self, live: _Live, data: Mapping[str, Any]) -> None:
        """An ACP permission request opened or closed: the task waits in needs_input while
        any is open (and the idle watchdog does not count that time)."""
        asking = self._asking.setdefault(live.task.id, {})
        if data.get("status") == "pending":
            asking[str(data.get("id"))] = dict(data)
        else:
            asking.pop(str(data.get("id")), None)
        self._spawn(self._permission_state(live), f"permission {live.task.id}")

    async def _permission_state(self, live: _Live) -> None:
        task = live.task
        if self._live.get(task.id) is not live or live.attempt.ended_at is not None:
            return
        asking = self._asking.get(task.id)
        if asking and task.state == S.RUNNING:
            first = next(iter(asking.values()))
            await self._move(task, S.NEEDS_INPUT, f"asks permission: {first.get('tool')}")
        elif not asking and task.state == S.NEEDS_INPUT:
            await self._move(task, S.RUNNING, "permission answered")

    async def _acp_turn_open(self, task: Task) -> bool:
        """Whether the task's last attempt is an ACP turn that has not ended."""
        attempts = await self.attempts(task.id)
        return bool(attempts) and attempts[-1].transport == acp.ACP and not attempts[-1].ended_at

    async def _start_process(
        self, task: Task, profile: Profile, adapter: Adapter, turn: Turn, reason: str
    ) -> Attempt | None:
        """Spawn the agent and record its attempt; None (and the task failed) if it can't."""
        if self._closed:
            return None
        try:
            profile = await self._with_secrets(task, profile)
        except SecretError as exc:
            await self._log(task, f"could not start {profile.name}: {exc}", "error")
            await self._move(task, S.FAILED, str(exc), Completion.AUTH)
            return None
        # From spawn to the attempt's record nothing may interrupt us: a broker closing in
        # between would leave an agent running that no later broker could find.
        self._launching += 1
        self._no_launch.clear()
        try:
            n = task.attempts + 1
            try:
                if isinstance(adapter, acp.AcpAdapter):
                    proc, how = await adapter.start(turn, profile, n)
                    await self._log(task, f"ACP turn {n}: {how}")
                else:
                    launch = adapter.launch(turn, profile)
                    proc = await asyncio.to_thread(runner.spawn, launch, Path(turn.task_dir), n)
            except (AgentNotFound, OSError, KeyError) as exc:
                await self._log(task, f"could not start {profile.name}: {exc}", "error")
                await self._move(task, S.FAILED, str(exc), Completion.WORKER_ERROR)
                return None
            transport = getattr(adapter, "transport", acp.NATIVE)
            return await self._record_attempt(task, profile, proc, n, reason, transport)
        finally:
            self._launching -= 1
            if not self._launching:
                self._no_launch.set()

    async def _with_secrets(self, task: Task, profile: Profile) -> Profile:
        """``profile`` with its keyring references resolved, for this launch only.

        The values go to the agent's environment and nowhere else; events mentioning one
        are redacted before they are stored (see :meth:`_emit_agent`).
        """
        settings = self.settings.last_good(task.root)
        use_backend(settings.secrets_backend if settings else None)
        env, secrets = await asyncio.to_thread(resolve_env, profile.env, profile.name)
        known = self._secrets.setdefault(task.id, [])
        known.extend(s for s in secrets if s not in known)
        return dataclasses.replace(profile, env=env)

    async def _record_attempt(
        self,
        task: Task,
        profile: Profile,
        proc: runner.ProcessRecord,
        n: int,
        reason: str,
        transport: str = acp.NATIVE,
    ) -> Attempt:
        task.attempts = n
        attempt = Attempt(
            task_id=task.id,
            n=n,
            reason=reason,
            worker=profile.name,
            provider=profile.provider,
            model=task.model,
            transport=transport,
            session_id=task.session_id,
            pid=proc.pid,
            out_path=str(proc.out_path),
            err_path=str(proc.err_path),
            exit_path=str(proc.exit_path),
            started_at=proc.started_at,
            owner=self.id,
        )
        await self.store.call(lambda s: s.save_attempt(dataclasses.replace(attempt)))
        await self._save(task)
        return attempt

    async def _follow(
        self, task: Task, attempt: Attempt, adapter: Adapter, outcome: Outcome
    ) -> None:
        """Tail the attempt's output, watch it, and settle the task when it ends."""
        live = await self._run(task, attempt, adapter, outcome)
        self._asking.pop(task.id, None)
        try:
            await self._settle_attempt(live)
        finally:
            if self._live.get(task.id) is live:
                del self._live[task.id]

    async def _run(
        self, task: Task, attempt: Attempt, adapter: Adapter, outcome: Outcome, side: bool = False
    ) -> _Live:
        """Tail the attempt's output and watch it until the process ends."""
        now = time.monotonic()
        tailer = Tailer(Path(attempt.out_path), attempt.out_offset)
        live = _Live(task, attempt, adapter, tailer, outcome, now, now, adapter.parser(), side)
        self._live[task.id] = live
        if task.id in self._cancelling:  # cancelled while the agent was being started
            self._cancelling.discard(task.id)
            live.stop, live.stop_message = Completion.CANCELLED, "cancelled by the user"
            self._spawn(self._interrupt(live), "cancel")
        pump = asyncio.get_running_loop().create_task(self._pump(live))
        try:
            exit_code = await self._watch(live, pump)
            # Drain what is left, then let the parser judge the end.
            tailer.finish()
            with contextlib.suppress(Exception):
                await pump
            parser_end = live.parser.finish(exit_code, runner.stderr_tail(Path(attempt.err_path)))
            await self._emit_agent(live, parser_end)
            attempt.exit_code = exit_code
            attempt.ended_at = time.time()
        finally:
            pump.cancel()
        return live

    async def _watch(self, live: _Live, pump: asyncio.Task[None]) -> int | None:
        """Wait for the process to end, enforcing the idle and wall-clock limits."""
        attempt = live.attempt
        exit_path = Path(attempt.exit_path)
        last_alive_check = 0.0
        while True:
            rec = runner.read_exit(exit_path) if exit_path.exists() else None
            if rec is not None:
                return rec.code
            now = time.monotonic()
            if pump.done() and not self._closed:
                # The output file went away (task folder deleted) or the parser broke.
                exc = pump.exception() if not pump.cancelled() else None
                if live.stop is None:
                    live.stop = Completion.WORKER_ERROR
                    live.stop_message = f"lost the agent's output: {exc}"
                await runner.kill_tree(attempt.pid or 0, self.limits.kill_grace)
                return None
            if now - last_alive_check > 1.0:
                last_alive_check = now
                if not runner.is_alive(attempt.pid or 0):
                    await asyncio.sleep(0.1)  # the exit record may be in flight
                    rec = runner.read_exit(exit_path) if exit_path.exists() else None
                    return rec.code if rec is not None else None
            if self._asking.get(live.task.id):
                # Waiting for the user's answer: neither a stall nor the agent's time.
                live.started += now - live.last_output
                live.last_output = now
            if live.stop is None:
                if now - live.last_output > self.limits.stall_after:
                    live.stop = Completion.STALLED
                    live.stop_message = (
                        f"no output for {self.limits.stall_after:.0f} s; the agent was stopped"
                    )
                elif now - live.started > self.limits.wall_clock:
                    live.stop = Completion.TIMEOUT
                    live.stop_message = f"ran longer than {self.limits.wall_clock:.0f} s"
                if live.stop is not None:
                    await runner.kill_tree(attempt.pid or 0, self.limits.kill_grace)
            await asyncio.sleep(self.limits.poll)

    async def _pump(self, live: _Live) -> None:
        parser = live.parser
        async for line in live.tailer:
            live.last_output = time.monotonic()
            events = parser.feed(line)
            if events:
                await self._emit_agent(live, events, wait=False)
        live.attempt.out_offset = live.tailer.offset

    async def _emit_agent(self, live: _Live, events: Sequence[Event], wait: bool = True) -> None:
        task, attempt = live.task, live.attempt
        secrets = self._secrets.get(task.id, [])
        stamped = [
            dataclasses.replace(e, task_id=task.id, attempt=attempt.n, data=redact(e.data, secrets))
            for e in events
        ]
        for e in stamped:
            live.outcome.observe(e)
            if live.side:
                continue
            if e.type == EventType.SESSION and e.data.get("id"):
                task.session_id = attempt.session_id = str(e.data["id"])
            elif e.type == EventType.TOOL and e.data.get("files"):
                self._schedule_draft(task)
            elif e.type == EventType.PERMISSION:
                self._track_permission(live, e.data)
            elif e.type == EventType.PLAN:
                task.options["plan"] = list(e.data.get("entries") or [])
            elif e.type == EventType.ERROR and e.data.get("stop") and live.stop is None:
                # The parser saw the agent stuck for good (e.g. retrying a dead server
                # forever): end the process; the error event says how the attempt ended.
                kill = runner.kill_tree(attempt.pid or 0, self.limits.kill_grace)
                self._spawn(kill, f"stop {task.id}")
        if not stamped:
            return
        fut = self.bus.emit_nowait(stamped, (task.id, attempt.n, live.tailer.offset))
        if wait:
            with contextlib.suppress(Exception):
                await fut
        else:
            fut.add_done_callback(lambda f: _stop_on_store_failure(live, f))

    async def _settle_attempt(self, live: _Live) -> None:
        task, attempt, outcome = live.task, live.attempt, live.outcome
        if task.state == S.NEEDS_INPUT and not live.side:  # a permission was still open
            await self._move(task, S.RUNNING, "the turn ended")
        stop = live.stop
        steer = stop == Completion.CANCELLED and live.stop_message.startswith("steer: ")
        attempt.completion = stop if stop is not None and not steer else outcome.completion
        attempt.session_id = outcome.session_id or attempt.session_id
        await self.store.call(lambda s: s.save_attempt(dataclasses.replace(attempt)))
        if outcome.cost is not None or outcome.input_tokens:
            task.options["usage"] = {
                "input": outcome.input_tokens,
                "output": outcome.output_tokens,
                "cost": outcome.cost,
            }
        if steer:
            await self._launch(task, live.stop_message.removeprefix("steer: "), "steer")
            return
        if stop is not None:
            target = S.CANCELLED if stop == Completion.CANCELLED else S.FAILED
            await self._move(task, target, live.stop_message, stop)
            return
        if outcome.error == Completion.RATE_LIMIT:
            settings = self.settings.last_good(task.root)
            fallback = settings.cooldown_for(task.provider) if settings else 60.0
            task.resets_at = outcome.resets_at or (
                time.time() + (outcome.retry_after if outcome.retry_after is not None else fallback)
            )
            await self._move(task, S.RATE_LIMITED, outcome.error_message, Completion.RATE_LIMIT)
            await self.store.call(
                accounts.record_cooldown,
                task.worker,
                task.provider,
                task.resets_at,
                outcome.error_message[:500],
                task.id,
            )
            if not await self._hand_off(task, "rate limited"):
                self._hold_until_reset(task)
            return
        if outcome.error is not None:
            await self._move(task, S.FAILED, outcome.error_message, outcome.error)
            return
        task.summary = outcome.answer
        if outcome.question is not None:
            await self._move(task, S.NEEDS_INPUT, outcome.question)
            return
        files = await self._compute_diff(task, final=True)
        if not files:
            self._record_evidence(task, [], files)
            await self._move(task, S.ANSWERED, "no changes", Completion.COMPLETED)
            await self._cleanup(task)
        elif _checks_of(task) or _reviewer_of(task):
            await self._verify(task)
        else:
            self._record_evidence(task, [], files)
            await self._move(task, S.REVIEW, "ready for review", Completion.COMPLETED)

    async def _verify(self, task: Task) -> None:
        """Run the project's checks, then the independent review; repair, or reach review."""
        checks, reviewer = _checks_of(task), _reviewer_of(task)
        if task.state != S.VERIFYING:
            await self._move(task, S.VERIFYING, "verifying the change")
        results = []
        for check in checks:
            if await self._stop_if_cancelled(task):
                return
            result = await asyncio.to_thread(run_check, check, _agent_cwd(task))
            results.append(result)
            await self._emit(
                task,
                EventType.VERIFY,
                {
                    "name": result.name,
                    "command": list(result.argv),
                    "exit": result.exit_code,
                    "seconds": round(result.seconds, 3),
                    "passed": result.passed,
                    "output": result.output[-1000:],
                },
            )
        files, _ = await self.diff(task.id)
        notes = [checks_summary(results)] if checks else []
        rounds = int(task.options.get("repair_rounds", 2))
        done = int(task.options.get("repair_round", 0))
        can_repair = done < rounds and bool(task.session_id)
        repair: str | None = None
        if not all(r.passed for r in results):
            repair = repair_prompt(results, done + 1, rounds)
        elif reviewer == task.worker:
            notes.append(f"review skipped: {reviewer} wrote the change")
        elif reviewer:
            if await self._stop_if_cancelled(task):
                return
            verdict = await self._review(task, reviewer, files)
            if verdict is None:  # cancelled during the review
                await self._move(task, S.CANCELLED, "cancelled by the user", Completion.CANCELLED)
                return
            task.options["review_result"] = {"worker": reviewer, **verdict.to_json()}
            await self._emit(task, EventType.REVIEW, task.options["review_result"])
            notes.append(f"review by {reviewer}: {verdict.verdict.replace('_', ' ')}")
            if verdict.verdict == REQUEST_CHANGES and verdict.readable:
                repair = review_repair_brief(verdict)
        self._record_evidence(task, results, files)
        message = "; ".join(notes) or "ready for review"
        if repair is None or not can_repair:
            await self._move(task, S.REVIEW, message, Completion.COMPLETED)
            return
        task.options["repair_round"] = done + 1
        await self._move(task, S.RUNNING, f"{message}; repair round {done + 1} of {rounds}")
        await self._launch(task, repair, "repair")

    async def _review(self, task: Task, reviewer: str, files: Sequence[FileDiff]) -> Verdict | None:
        """A different worker reviews the change in a checkout of its own; None if cancelled."""
        profile = self._profile(reviewer, task.root)
        adapter = adapter_for(profile.provider)
        snap = _snapshot_of(task)
        review_id = f"{task.id}-review"
        result = await asyncio.to_thread(in_background, _result_snapshot, snap, task.id)
        path = await asyncio.to_thread(
            in_background, create_worktree, result, review_id, worktrees_dir(self.home)
        )
        try:
            turn = Turn(
                task_id=task.id,
                prompt=review_brief(task.instruction, files),
                cwd=str(path / snap.prefix),
                reason="review",
                model=profile.model,
                task_dir=str(task_dir(self.home, task.id)),
            )
            attempt = await self._start_process(task, profile, adapter, turn, "review")
            if attempt is None:
                return Verdict(
                    REQUEST_CHANGES, summary="the reviewer could not start", readable=False
                )
            live = await self._run(task, attempt, adapter, Outcome(), side=True)
            if self._live.get(task.id) is live:
                del self._live[task.id]
            attempt.completion = live.stop or live.outcome.completion
            attempt.session_id = live.outcome.session_id
            await self.store.call(Store.save_attempt, dataclasses.replace(attempt))
            if live.stop == Completion.CANCELLED:
                return None
            if live.stop is not None or live.outcome.error is not None:
                why = live.stop_message or live.outcome.error_message
                return Verdict(REQUEST_CHANGES, summary=f"the review failed: {why}", readable=False)
            return parse_verdict(live.outcome.answer)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(in_background, remove_worktree, result, review_id, path)

    def _record_evidence(
        self, task: Task, results: Sequence[CheckResult], files: Sequence[FileDiff]
    ) -> None:
        """What was checked, what was not, and what the worker produced."""
        task.options["evidence"] = {
            "checks": [r.to_json() for r in results],
            "unchecked": [] if results else ["no checks configured for this task"],
            "files": [f.path for f in files],
            "branch": task.branch,
            "repair_rounds": int(task.options.get("repair_round", 0)),
        }

    async def _stop_if_cancelled(self, task: Task) -> bool:
        """Honour a cancel that came between steps; True if the task is now cancelled."""
        if task.id not in self._cancelling:
            return False
        self._cancelling.discard(task.id)
        await self._move(task, S.CANCELLED, "cancelled by the user", Completion.CANCELLED)
        return True

    def _hold_until_reset(self, task: Task) -> None:
        delay = max(0.0, (task.resets_at or time.time()) - time.time())

        def requeue() -> None:
            self._timers.pop(task.id, None)
            self._spawn(self._resume_after_reset(task), f"reset {task.id}")

        self._cancel_timer(task.id)
        self._timers[task.id] = asyncio.get_running_loop().call_later(delay, requeue)

    async def _resume_after_reset(self, task: Task) -> None:
        async with self._lock(task.id):
            if task.state != S.RATE_LIMITED:
                return
            await self._move(task, S.QUEUED, "rate limit reset")
        prompt = "Continue." if task.session_id else task.brief
        await self._run_queued(task, "retry", prompt)

    def _cancel_timer(self, task_id: str) -> None:
        handle = self._timers.pop(task_id, None)
        if handle is not None:
            handle.cancel()

    # ------------------------------------------------------------------ diffs and decisions

    def request_draft(self, task_id: str) -> bool:
        """Recompute a running task's draft diff soon (debounced), e.g. when a file watcher
        saw its worktree change. False when no running task of this broker has that id."""
        task = self._tasks.get(task_id)
        if task is None or task.state != S.RUNNING:
            return False
        self._schedule_draft(task)
        return True

    def _schedule_draft(self, task: Task) -> None:
        if task.id in self._drafts or not task.worktree:
            return
        loop = asyncio.get_running_loop()

        def fire() -> None:
            self._drafts.pop(task.id, None)
            if task.state == S.RUNNING:
                self._spawn(self._compute_diff(task, final=False), f"draft {task.id}")

        self._drafts[task.id] = loop.call_later(self.limits.draft_debounce, fire)

    async def _compute_diff(self, task: Task, *, final: bool) -> list[FileDiff]:
        # One diff at a time per task, and no draft once the attempt has ended: a draft
        # finishing after the final diff would otherwise overwrite it.
        async with self._diff_locks.setdefault(task.id, asyncio.Lock()):
            live = self._live.get(task.id)
            ended = live is None or live.attempt.ended_at is not None
            if not final and (task.state != S.RUNNING or ended):
                return []
            return await self._compute_diff_now(task, final=final)

    async def _compute_diff_now(self, task: Task, *, final: bool) -> list[FileDiff]:
        if not task.worktree or not Path(task.worktree).exists():
            return []
        snap = _snapshot_of(task)
        files = await asyncio.to_thread(in_background, compute_diff, snap, Path(task.worktree))
        await self._record_diff(task, files, final=final)
        return files

    async def _record_diff(self, task: Task, files: list[FileDiff], *, final: bool) -> None:
        """Store the task's diff and say so with a ``diff`` event (its size)."""
        await self.store.call(lambda s: s.save_diff(task.id, files, final))
        added, removed = count_lines(h for f in files for h in f.hunks)
        hunks = sum(len(f.hunks) for f in files)
        await self._emit(
            task,
            EventType.DIFF,
            {
                "final": final,
                "files": len(files),
                "hunks": hunks,
                "added": added,
                "removed": removed,
            },
        )

    async def _decide(self, task: Task, decisions: dict[str, HunkState]) -> None:
        if decisions:
            await self.store.call(lambda s: s.set_hunk_states(task.id, decisions))
        files, _ = await self.diff(task.id)
        states = [h.state for f in files for h in f.hunks]
        if HunkState.PENDING in states:
            return
        if task.id in self._proposals:
            await self._answer_proposal(task, files)
            return
        if HunkState.ACCEPTED in states:
            await self._move(task, S.APPLIED, "accepted", task.completion)
        else:
            await self._move(task, S.REJECTED, "rejected", task.completion)
        await self._cleanup(task)
        if task.state == S.APPLIED and task.group and task.options.get("compare"):
            await self._close_group(task)
        if self._deferred:
            self._spawn(self._release_dependents(), f"dependents after {task.id}")

    async def _cleanup(self, task: Task) -> None:
        if not task.worktree:
            return
        snap = _snapshot_of(task)
        try:
            await asyncio.to_thread(
                in_background, remove_worktree, snap, task.id, Path(task.worktree)
            )
        except Exception as exc:
            await self._log(task, f"could not remove the worktree: {exc}", "warning")

    # ------------------------------------------------------------------ adoption

    async def adopt(self) -> list[str]:
        """Take over the tasks of brokers that are gone. Returns the adopted task ids."""
        await self._withdraw_orphans()
        states = [str(x) for x in (*_OWNED, S.NEEDS_INPUT)]
        tasks: list[tuple[Task, str | None]] = await self.store.call(
            lambda s: s.tasks_with_owner(states=states)
        )
        adopted = []
        for task, owner in tasks:
            if owner == self.id or broker_alive(owner) or task.id in self._tasks:
                continue
            if task.state == S.NEEDS_INPUT and not await self._acp_turn_open(task):
                continue  # a question: nothing runs, the user replies
            adopted.append(task.id)
            await self._adopt_one(task)
        return adopted

    async def _adopt_one(self, task: Task) -> None:
        self._tasks[task.id] = task
        await self.store.call(lambda s: s.set_owner(task.id, self.id))
        await self._log(task, f"adopted by broker {self.id}")
        with contextlib.suppress(TaskError):
            self._settings(task.root)  # the project's own profiles: the task may use one
        if task.state == S.PREPARING and not task.attempts:
            await self._move(task, S.QUEUED, "the broker died while preparing; again")
        if task.state == S.QUEUED and task.options.get("depends_on") and not task.attempts:
            self._deferred[task.id] = _request_of(task)
            return
        if task.state == S.QUEUED:
            if task.attempts and task.worktree:
                self._spawn(self._run_queued(task, "retry"), f"queued {task.id}")
            else:
                # Never started: prepare it again from what the task records (unsaved
                # buffers that were given as overlays are not kept and so not restored).
                self._spawn(self._prepare_and_run(task, _request_of(task)), f"task {task.id}")
            return
        if task.state == S.RATE_LIMITED:
            self._hold_until_reset(task)
            return
        if task.state == S.VERIFYING:
            self._spawn(self._verify(task), f"verify {task.id}")
            return
        attempts: list[Attempt] = await self.store.call(lambda s: s.attempts(task.id))
        last = attempts[-1] if attempts else None
        if last is None or last.ended_at is not None:
            # An agent may have been started without its attempt being recorded.
            strays = await asyncio.to_thread(_stray_wrappers, task_dir(self.home, task.id))
            for pid in strays:
                await runner.kill_tree(pid, self.limits.kill_grace)
            note = f"; stopped {len(strays)} unrecorded agent process(es)" if strays else ""
            await self._move(
                task, S.INTERRUPTED, "no agent attempt was running" + note, Completion.INTERRUPTED
            )
            return
        exit_path = Path(last.exit_path)
        if not exit_path.exists() and not runner.is_alive(last.pid or 0):
            await self._move(
                task,
                S.INTERRUPTED,
                "the agent process vanished while no broker watched it",
                Completion.INTERRUPTED,
            )
            return
        if task.state == S.PREPARING:
            await self._move(task, S.RUNNING, "adopted")
        past = await self.events(task.id)
        outcome = Outcome.fold(e for e in past if e.attempt == last.n)
        provider = self._profile(task.worker, task.root).provider
        adapter: Adapter = adapter_for(provider)
        if last.transport == acp.ACP:
            adapter = acp.AcpAdapter(provider)
            waiting = acp.pending_permissions(past)
            if waiting:
                self._asking[task.id] = {str(p["id"]): p for p in waiting}
        self._spawn(self._follow_adopted(task, last, adapter, outcome), f"adopted {task.id}")

    async def _follow_adopted(
        self, task: Task, attempt: Attempt, adapter: Adapter, outcome: Outcome
    ) -> None:
        async with self._slot(task.worker, task.root):
            await self._follow(task, attempt, adapter, outcome)

    async def _owned_or_adopt(self, task_id: str) -> Task:
        tid: str = await self.store.call(lambda s: s.resolve_id(task_id))
        if tid in self._tasks:
            return self._tasks[tid]
        task, owner = await self.store.call(lambda s: s.task_with_owner(tid))
        if task.state in _OWNED and broker_alive(owner) and owner != self.id:
            raise TaskError(
                f"task {tid} is {task.state} and supervised by another broker (pid "
                f"{(owner or '?').split(':')[0]}); ask that broker"
            )
        if task.state in _OWNED:
            await self._adopt_one(task)
            return self._tasks[tid]
        return task

    async def _fresh(self, task_id: str) -> Task:
        if task_id in self._tasks:
            return self._tasks[task_id]
        task: Task = await self.store.call(lambda s: s.get_task(task_id))
        return task

    # ------------------------------------------------------------------ helpers

    def _profile(self, name: str, root: str | None = None) -> Profile:
        """A worker's profile in the settings of ``root`` (the broker's defaults without)."""
        settings = self.settings.last_good(root) if root else None
        profiles = settings.profiles if settings is not None else self.profiles
        profile = profiles.get(name) or self.profiles.get(name)
        if profile is None:
            known = ", ".join(sorted(profiles)) or "none"
            raise TaskError(f"unknown worker {name!r}; configured workers: {known}")
        if not profile.enabled:
            raise TaskError(f"worker {name!r} is disabled")
        return profile

    def _lock(self, task_id: str) -> asyncio.Lock:
        return self._locks.setdefault(task_id, asyncio.Lock())

    async def _move(
        self,
        task: Task,
        target: TaskState,
        reason: str = "",
        completion: Completion | None = None,
    ) -> None:
        before = task.state
        task.state = transition(before, target)
        task.updated_at = time.time()
        if completion is not None:
            task.completion = completion
        if reason and target not in (S.RUNNING, S.PREPARING, S.QUEUED):
            task.message = reason
        if target in SETTLED or target == S.REVIEW:
            self._cancelling.discard(task.id)
            task.settled_at = task.updated_at
            self._tasks.pop(task.id, None)
        else:
            task.settled_at = None
        owner = self.id if target in _OWNED or target == S.NEEDS_INPUT else None
        snapshot = _copy(task)
        try:
            await self.store.call(lambda s: s.save_task(snapshot, owner=owner))
            self._unsaved.pop(task.id, None)
        except Exception as exc:
            log.error("task %s: could not record %s → %s: %s", task.id, before, target, exc)
            self._unsaved[task.id] = (snapshot, owner)
        if target in _OWNED or target == S.NEEDS_INPUT:
            self._tasks[task.id] = task
        data: dict[str, Any] = {"from": str(before), "to": str(target), "reason": reason}
        if completion is not None:
            data["completion"] = str(completion)
        if target == S.RATE_LIMITED:
            data["resets_at"] = task.resets_at
        try:
            await self.bus.emit([Event(EventType.STATE, data, task_id=task.id)])
        except Exception as exc:
            log.error("task %s: could not record %s → %s: %s", task.id, before, target, exc)
        if target in SETTLED or target == S.REVIEW:
            self._secrets.pop(task.id, None)
            try:
                await self.store.call(accounts.record_outcome, snapshot)
            except Exception as exc:
                log.warning("task %s: could not record its outcome in the ledger: %s", task.id, exc)

    async def _save(self, task: Task) -> None:
        snapshot = _copy(task)
        await self.store.call(lambda s: s.save_task(snapshot, owner=self.id))

    async def _emit(self, task: Task, type: EventType, data: dict[str, Any]) -> None:
        await self.bus.emit([Event(type, data, task_id=task.id, attempt=task.attempts)])

    async def _log(self, task: Task, message: str, level: str = "info") -> None:
        with contextlib.suppress(Exception):
            await self.bus.emit(
                [Event(EventType.LOG, {"level": level, "message": message}, task_id=task.id)]
            )


def _stray_wrappers(folder: Path) -> list[int]:
    """Pids of agent wrappers writing into ``folder`` (found by their command line)."""
    marker = str(folder) + os.sep
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info.get("cmdline") or []
        if "baton.process.wrap" in cmd and any(str(a).startswith(marker) for a in cmd):
            found.append(proc.pid)
    return found


def _save_task(store: Store, task: Task, owner: str | None) -> None:
    store.save_task(task, owner=owner)


def _stop_on_store_failure(live: _Live, fut: asyncio.Future[list[Event]]) -> None:
    if fut.cancelled() or fut.exception() is None or live.stop is not None:
        return
    live.stop = Completion.WORKER_ERROR
    live.stop_message = f"could not record the agent's events: {fut.exception()}"
    live.tailer.finish()


def _state_event(task_id: str, before: TaskState | None, after: TaskState, reason: str) -> Event:
    return Event(
        EventType.STATE,
        {"from": str(before) if before else None, "to": str(after), "reason": reason},
        task_id=task_id,
    )


def _log_if_failed(fut: asyncio.Future[list[Event]]) -> None:
    if not fut.cancelled() and fut.exception() is not None:
        log.error("could not record an event: %s", fut.exception())


def _copy(task: Task) -> Task:
    """A copy the store thread can write while the loop goes on changing the task.

    Shallow where that is safe: the supervisor replaces option values, never mutates them.
    """
    return dataclasses.replace(
        task, targets=list(task.targets), scope=list(task.scope), options=dict(task.options)
    )


def _snapshot_of(task: Task) -> Snapshot:
    data = task.options.get("snapshot")
    if not isinstance(data, dict):
        raise TaskError(f"task {task.id} has no snapshot")
    return Snapshot.from_json(data)


def _request_of(task: Task) -> DelegateRequest:
    return DelegateRequest(
        instruction=task.instruction,
        root=task.root,
        action=task.action,
        kind=task.kind,
        targets=task.targets,
        scope=task.scope,
        worker=task.worker,
        model=task.model,
        title=task.title,
        group=task.group,
    )


def _project_options(settings: Settings, kind: str) -> dict[str, Any]:
    """The project's checks, repair rounds and reviewer as task options (a request's win)."""
    out: dict[str, Any] = {"repair_rounds": settings.repair_rounds}
    if settings.verify:
        out["verify"] = [
            {"name": v.name, "argv": list(v.argv), "timeout": v.timeout} for v in settings.verify
        ]
    review = settings.review
    if review.worker and (not review.kinds or kind in review.kinds):
        out["review"] = {"worker": review.worker}
    return out


def _reviewer_of(task: Task) -> str | None:
    review = task.options.get("review")
    if isinstance(review, dict) and isinstance(review.get("worker"), str):
        return str(review["worker"])
    return None


def _result_snapshot(snap: Snapshot, task_id: str) -> Snapshot:
    """The worker's result (the commit compute_diff last recorded) as a snapshot to check out."""
    commit = str(run_git(["rev-parse", snap.result_ref], snap.git_dir, git_dir=snap.git_dir))
    return dataclasses.replace(snap, commit=commit.strip(), task_id=f"{task_id}-review")


def _checks_of(task: Task) -> list[Check]:
    raw = task.options.get("verify") or []
    return [Check.from_json(c) for c in raw if isinstance(c, dict)]


def _agent_cwd(task: Task) -> str:
    """The worktree folder matching the folder the user delegated from."""
    if not task.worktree:
        return task.root
    return str(Path(task.worktree) / _snapshot_of(task).prefix)


def _not_a_proposal(task: Task, move: str) -> None:
    if task.options.get("proposal"):
        raise TaskError(
            f"task {task.id} is an edit {task.worker} proposed: {move} does not apply; accept "
            f"or reject it, or answer in {task.worker} itself"
        )


def _resolve_hunks(files: Sequence[FileDiff], ids: Sequence[str]) -> set[str]:
    from baton.core.diff import find_hunk

    chosen: set[str] = set()
    for hid in ids:
        found = find_hunk(files, hid)
        if found is None:
            known = ", ".join(h.id for f in files for h in f.hunks) or "none"
            raise TaskError(f"unknown hunk {hid!r}; this task's hunks: {known}")
        chosen.add(found[1].id)
    return chosen


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


__all__ = ["DelegateRequest", "Limits", "Supervisor", "TaskError", "UnknownTask"]
