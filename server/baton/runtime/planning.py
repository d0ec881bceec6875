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
the user's edited ones) against the policy as it is now and delegates them as a graph
(:meth:`Supervisor.delegate_graph <baton.runtime.supervisor.Supervisor.delegate_graph>`,
what the websocket's ``graph`` method calls), in the planner's folder. A plan is approved
once: the graph's tasks are recorded on the planner task, and a second approval is refused
naming them. :meth:`Planning.reject` records that the user said no (a planner still at
work is cancelled): from then on no surface approves it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baton.config.layers import ConfigError
from baton.config.logins import why_unusable
from baton.core import plan as plans
from baton.core.events import EventType
from baton.core.lifecycle import SETTLED, TaskState
from baton.core.task import Task
from baton.runtime.broker import TaskError
from baton.runtime.recorded import copy
from baton.runtime.requests import DelegateRequest, GraphNode

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
        if rejected:
            problems = [*problems, REJECTED]
        return Proposal(task, SETTLED_, None, nodes, problems, approved, goal, rejected)

    async def approve(self, task_id: str, nodes: list[Any] | None = None) -> dict[str, Task]:
        """Run the planner's nodes (or ``nodes``, edited by the user) as a graph in its
        folder, checked again first; returns key → task. PlanRefused, with every reason,
        when the planner has not settled, the nodes do not pass, or the plan was approved."""
        task = await self.sup.get(task_id)
        async with self.sup.book.lock(task.id):
            found = await self.proposal(task.id)
            if found.approved:
                raise PlanRefused(
                    f"the plan of task {found.task.id} was approved already",
                    [_approved_already(found.approved)],
                    found.approved,
                )
            if found.rejected:
                raise PlanRefused(f"the plan of task {found.task.id} was rejected", [REJECTED])
            if found.state != SETTLED_:
                why = (
                    "asks a question (reply to it)"
                    if found.state == QUESTION
                    else "is still working"
                )
                raise PlanRefused(f"the planner {found.task.id} {why}", [f"the planner {why}"])
            chosen: Any = found.nodes if nodes is None else nodes
            wrong = found.problems
            if nodes is not None:
                wrong = plans.problems(nodes, await self.workers(found.task.root))
            if wrong:
                raise PlanRefused(f"the plan of task {found.task.id} is refused", wrong)
            built = [_node(n, found.task.root) for n in chosen]
            created = await self.sup.delegate_graph(built)
            await self._record_approval(found.task.id, {k: t.id for k, t in created.items()})
        return created

    async def reject(self, task_id: str) -> Task:
        """Record that the plan of ``task_id`` is not wanted (a planner still at work or
        asking is cancelled); approving it is refused from then on. PlanRefused once it
        was approved; rejecting twice changes nothing."""
        task = await self.sup.get(task_id)
        async with self.sup.book.lock(task.id):
            record = _record(task)
            if record.get("approved"):
                approved = dict(record["approved"])
                raise PlanRefused(
                    f"the plan of task {task.id} was approved already",
                    [_approved_already(approved)],
                    approved,
                )
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
