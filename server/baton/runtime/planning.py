"""Planning: a worker proposes a task graph for a goal, Baton checks it, the user approves it
and it runs as a graph — the one flow every surface (CLI, websocket, MCP, editors) shares.

:meth:`Planning.propose` delegates the planner: a read-only task (its checkout is mounted
read-only and whatever it leaves there is dropped, like ``ask``) whose brief is
:func:`baton.core.plan.brief` for the goal and the workers the project may use, routed as a
``reasoning`` task unless a worker is named. :meth:`Planning.proposal` reads where it is:
still working, asking the user a question (answered with a ``reply``, like any task), or
settled with the nodes of its answer and everything wrong with them
(:func:`baton.core.plan.problems`: shape, keys, cycles, workers the policy does not allow,
scopes that could meet). :meth:`Planning.approve` checks the nodes again (the planner's, or
the user's edited ones) against the policy as it is now and delegates them as a graph (each
node a task waiting for the ones it comes after, as the websocket's ``graph`` method does),
in the planner's folder. :meth:`Planning.reject` records that the user said no (a planner
still at work is cancelled): from then on no surface approves it.

A plan is approved once, by one broker, and a broker killed half-way leaves no second
graph behind. An approval holds ``plan-approval.lock`` in the planner's task folder
(``flock``: brokers of one state home exclude each other; a dead one's lock goes with it),
and records its intent before its effect: ``plan-approval.json``, the nodes to run and the
task id each will have, written whole before the first of them is delegated. The graph's
tasks are then recorded on the planner task; a second approval is refused naming them. An
approval that finds an intent without that record finishes it — it delegates the nodes
whose ids are not stored yet, those nodes and no others — and rejecting is refused from
the moment an intent exists.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import json
import os
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baton.config.layers import ConfigError
from baton.config.logins import why_unusable
from baton.core import plan as plans
from baton.core.events import EventType
from baton.core.lifecycle import SETTLED, TaskState
from baton.core.task import Task, new_task_id
from baton.faults import crash_point
from baton.runtime.broker import TaskError
from baton.runtime.graph import in_order
from baton.runtime.recorded import copy
from baton.runtime.requests import DelegateRequest, GraphNode
from baton.store import UnknownTask
from baton.store.paths import task_dir

if TYPE_CHECKING:
    from baton.runtime.supervisor import Supervisor

S = TaskState
#: The routing kind of a planner that names no worker.
PLANNER_KIND = "reasoning"
#: Where a planner task keeps its goal and, once approved, its graph's tasks (key → id).
OPTION = "planner"
#: A proposal's states: the planner works, asks the user, or has settled.
WORKING, QUESTION, SETTLED_ = "working", "question", "settled"
#: The problem a rejected plan has, whatever its nodes.
REJECTED = "the plan was rejected"
#: In the planner's task folder: the approval's intent (nodes and their task ids), and the
#: lock an approval or a rejection holds.
INTENT, LOCK = "plan-approval.json", "plan-approval.lock"
#: Seconds an approval or rejection waits for another one of the same plan to end.
LOCK_WAIT = 10.0
#: The problem of a plan whose approval a broker did not finish.
UNFINISHED = "an approval of this plan did not finish (its broker stopped): approve it to finish it"


class PlanRefused(TaskError):
    """An approval that cannot be done: ``problems`` says every reason; ``tasks`` (key →
    task id) are the graph's tasks when the plan was approved already."""

    def __init__(
        self, message: str, problems: Sequence[str], tasks: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.problems = list(problems)
        self.tasks = tasks


@dataclass(frozen=True, slots=True)
class Proposal:
    """Where a planner task is. ``state``: ``working``, ``question`` (``question`` holds
    its text) or ``settled``; then ``nodes`` is the JSON list of its answer (None when it
    holds none, or the planner failed) and ``problems`` every reason it cannot be approved —
    empty: it can. ``approved``: the graph's tasks (key → id) once approved; ``goal``: what
    the planner was asked to plan; ``rejected``: the user said no (:meth:`Planning.reject`)."""

    task: Task
    state: str
    question: str | None = None
    nodes: list[Any] | None = None
    problems: list[str] = field(default_factory=list)
    approved: dict[str, str] | None = None
    goal: str = ""
    rejected: bool = False


class Planning:
    """The planner flow over one supervisor."""

    def __init__(self, sup: Supervisor) -> None:
        self.sup = sup

    async def workers(self, root: str | Path) -> list[str]:
        """The workers a plan in ``root`` may name: those the project's policy allows and
        that can run here now (the ``workers`` method's ``allowed`` and ``can_run``)."""
        try:
            return await asyncio.to_thread(self._workers, Path(root).resolve())
        except ConfigError as exc:
            raise TaskError(f"Baton's settings: {exc}") from None

    def _workers(self, root: Path) -> list[str]:
        settings = self.sup.settings.get(root)
        profiles = {**self.sup.profiles, **settings.profiles}
        allowed = settings.allowed_profiles()
        return [n for n, prof in profiles.items() if n in allowed and why_unusable(prof) is None]

    async def propose(self, goal: str, root: str | Path, worker: str | None = None) -> Task:
        """Delegate the planner for ``goal`` in ``root`` (``worker``: that one, else the
        project's routing for a ``reasoning`` task); returns its task at once."""
        if not goal.strip():
            raise ValueError("the goal is empty")
        folder = str(Path(root).resolve())
        allowed = await self.workers(folder)
        first = goal.strip().splitlines()[0]
        req = DelegateRequest(
            instruction=plans.brief(goal, allowed),
            root=folder,
            kind=None if worker else PLANNER_KIND,
            worker=worker,
            title=f"plan: {first[:200]}",
            options={"read_only": True, OPTION: {"goal": goal.strip()}},
        )
        return await self.sup.delegate(req)

    async def proposal(self, task_id: str) -> Proposal:
        """Where the planner task ``task_id`` is (TaskError for a task that is no planner)."""
        task = await self.sup.get(task_id)
        record = _record(task)
        approved, goal = record.get("approved") or None, str(record.get("goal", ""))
        rejected = bool(record.get("rejected"))
        if task.state == S.NEEDS_INPUT and not rejected:
            return Proposal(task, QUESTION, question=task.message, approved=approved, goal=goal)
        if task.state in (S.ANSWERED, S.REVIEW):
            nodes, problems = await self._check(await self._answer(task), task.root)
        elif task.state in SETTLED:
            why = task.message or str(task.completion or "")
            nodes, problems = None, [f"the planner ended {task.state}: {why}".rstrip(": ")]
        elif not rejected:
            return Proposal(task, WORKING, approved=approved, goal=goal)
        else:
            nodes, problems = None, []
        if approved:
            problems = [*problems, _approved_already(approved)]
        elif await asyncio.to_thread(_read_intent, task_dir(self.sup.home, task.id)):
            problems = [*problems, UNFINISHED]
        if rejected:
            problems = [*problems, REJECTED]
        return Proposal(task, SETTLED_, None, nodes, problems, approved, goal, rejected)

    async def approve(self, task_id: str, nodes: list[Any] | None = None) -> dict[str, Task]:
        """Run the planner's nodes (or ``nodes``, edited by the user) as a graph in its
        folder, checked again first; returns key → task. PlanRefused, with every reason,
        when the planner has not settled, the nodes do not pass, or the plan was approved.
        An approval a broker did not finish is finished as it was intended (``nodes`` is
        then not used)."""
        task = await self.sup.get(task_id)
        folder = task_dir(self.sup.home, task.id)
        async with self.sup.book.lock(task.id), _approving(folder):
            found = await self.proposal(task.id)
            stored = await self.sup.store.call(lambda s: s.get_task(task.id))
            approved = found.approved or _record(stored).get("approved")  # by any broker
            if approved:
                raise PlanRefused(
                    f"the plan of task {found.task.id} was approved already",
                    [_approved_already(approved)],
                    approved,
                )
            intent = await asyncio.to_thread(_read_intent, folder)
            if intent is None:
                intent = await self._intent(found, nodes)
                await asyncio.to_thread(_write_intent, folder, intent)
            created = await self._delegate(intent, found.task.root)
            await self._record_approval(found.task.id, {k: t.id for k, t in created.items()})
        return created

    async def _intent(self, found: Proposal, nodes: list[Any] | None) -> dict[str, Any]:
        """What approving ``found`` will run: its checked nodes and their task ids."""
        if found.rejected:
            raise PlanRefused(f"the plan of task {found.task.id} was rejected", [REJECTED])
        if found.state != SETTLED_:
            why = "asks a question (reply to it)" if found.state == QUESTION else "is still working"
            raise PlanRefused(f"the planner {found.task.id} {why}", [f"the planner {why}"])
        chosen: Any = found.nodes if nodes is None else nodes
        wrong = found.problems
        if nodes is not None:
            wrong = plans.problems(nodes, await self.workers(found.task.root))
        if wrong:
            raise PlanRefused(f"the plan of task {found.task.id} is refused", wrong)
        return {"nodes": chosen, "ids": {n["key"]: new_task_id() for n in chosen}}

    async def _delegate(self, intent: dict[str, Any], root: str) -> dict[str, Task]:
        """The intent's graph, each node delegated with its chosen id unless it is stored
        already (a broker that died half-way delegated it)."""
        ids: dict[str, str] = intent["ids"]
        built = [_node(n, root) for n in intent["nodes"]]
        created: dict[str, Task] = {}
        for n in in_order(built):
            try:
                created[n.key] = await self.sup.get(ids[n.key])
                continue
            except UnknownTask:
                pass
            after = [ids[k] for k in n.after]
            req = dataclasses.replace(n.request, task_id=ids[n.key], depends_on=after)
            created[n.key] = await self.sup.delegate(req)
            crash_point("plan_node")
        return created

    async def reject(self, task_id: str) -> Task:
        """Record that the plan of ``task_id`` is not wanted (a planner still at work or
        asking is cancelled); approving it is refused from then on. PlanRefused once it
        was approved; rejecting twice changes nothing."""
        task = await self.sup.get(task_id)
        folder = task_dir(self.sup.home, task.id)
        async with self.sup.book.lock(task.id), _approving(folder):
            task = await self.sup.store.call(lambda s: s.get_task(task.id))
            record = _record(task)
            if record.get("approved"):
                approved = dict(record["approved"])
                raise PlanRefused(
                    f"the plan of task {task.id} was approved already",
                    [_approved_already(approved)],
                    approved,
                )
            if await asyncio.to_thread(_read_intent, folder) is not None:
                raise PlanRefused(f"the plan of task {task.id} is being approved", [UNFINISHED])
            if not record.get("rejected"):
                live = await self.sup.book.get(task.id)
                live.options[OPTION] = {**record, "rejected": True}
                await self.sup.store.save_task(copy(live))
                await self.sup.book.log(live, "plan rejected: nothing of it runs")
        if task.state not in SETTLED and task.state != S.REVIEW:
            await self.sup.cancel(task.id)
        return await self.sup.get(task.id)

    async def _answer(self, task: Task) -> str:
        """The planner's last final text (its answer), else its summary."""
        text = task.summary
        for e in await self.sup.events(task.id):
            if e.type == EventType.FINAL:
                text = str(e.data.get("text", ""))
        return text

    async def _check(self, text: str, root: str) -> tuple[list[Any] | None, list[str]]:
        try:
            nodes = plans.parse(text)
        except ValueError as exc:
            return None, [str(exc)]
        return nodes, plans.problems(nodes, await self.workers(root))

    async def _record_approval(self, task_id: str, tasks: dict[str, str]) -> None:
        task = await self.sup.book.get(task_id)
        task.options[OPTION] = {**_record(task), "approved": tasks}
        await self.sup.store.save_task(copy(task))
        listed = ", ".join(f"{k} {i}" for k, i in tasks.items())
        await self.sup.book.log(task, f"plan approved; its tasks: {listed}")


@contextlib.asynccontextmanager
async def _approving(folder: Path) -> AsyncIterator[None]:
    """Hold the plan's lock (any broker's approval or rejection of it excludes the others);
    PlanRefused after :data:`LOCK_WAIT` seconds of another one holding it."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise PlanRefused(
                        "another broker is approving or rejecting this plan: try again",
                        ["the plan is being approved or rejected"],
                    ) from None
                await asyncio.sleep(0.05)
        yield
    finally:
        os.close(fd)  # the lock goes with it


def _read_intent(folder: Path) -> dict[str, Any] | None:
    try:
        found = json.loads((folder / INTENT).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return found if isinstance(found, dict) else None


def _write_intent(folder: Path, intent: dict[str, Any]) -> None:
    """Write the approval's intent whole and durably (temp file, fsync, rename)."""
    temp = folder / (INTENT + ".tmp")
    with temp.open("w", encoding="utf-8") as f:
        json.dump(intent, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temp, folder / INTENT)
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _record(task: Task) -> dict[str, Any]:
    record = task.options.get(OPTION)
    if not isinstance(record, dict):
        raise TaskError(f"task {task.id} is not a planner (a plan starts one)")
    return record


def _approved_already(tasks: dict[str, str]) -> str:
    return "the plan was approved already: " + ", ".join(f"{k} {i}" for k, i in tasks.items())


def _node(node: dict[str, Any], root: str) -> GraphNode:
    """A checked plan node as a graph node delegated in ``root``."""
    req = DelegateRequest(
        instruction=node["instruction"],
        root=root,
        kind=node.get("kind"),
        scope=list(node.get("scope", [])),
        worker=node.get("worker"),
    )
    return GraphNode(node["key"], req, list(node.get("after", [])))
