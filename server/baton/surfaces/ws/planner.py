"""The broker's ``plan``: a worker proposes a task graph for a goal, Baton checks it, and the
user approves it — :class:`baton.runtime.Planning` over the websocket (what ``baton plan``,
the MCP ``project`` tool and the editors use).

- ``{goal, cwd?, worker?, timeout?}`` delegates the planner and answers ``{task}`` at once;
  with ``timeout`` (seconds) it waits for the planner to settle or ask, and answers as below.
- ``{id, timeout?}`` reads it: ``{task}`` while it works, ``{task, question}`` when it asks
  (answer with ``reply``), ``{task, nodes, problems}`` once settled — ``problems`` empty:
  it can be approved; ``approved`` (key → task id) once it was.
- ``{id, reject: true}``: the plan is not wanted (a planner at work is cancelled); no
  surface approves it from then on.
- ``{id, approve: true, nodes?}`` runs its nodes (or ``nodes``, edited) as a graph:
  ``{tasks: {key: task}}``. Refused with ``WRONG_STATE`` and ``data.problems`` when they do
  not pass, the planner has not settled, or the plan was approved already (then
  ``data.tasks`` names the graph's tasks: a plan is approved once).

Part of the method table of :class:`baton.surfaces.ws.methods.Methods`, which gives it its
way of refusing a move and of reading a delegate request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import baton.surfaces.ws.answers as answers
import baton.surfaces.ws.protocol as p
import baton.surfaces.ws.waiting as waiting
from baton.runtime import DelegateRequest, Planning, PlanRefused, Proposal, Supervisor

Moved = Callable[[Awaitable[Any], str | None], Awaitable[Any]]
#: ``plan`` waits at most this many seconds for the planner (then answers with its line).
PLAN_WAIT_MAX = 3600.0


class Plans:
    """``plan``, for one broker."""

    def __init__(
        self,
        sup: Supervisor,
        moved: Moved,
        request: Callable[[dict[str, Any]], Awaitable[DelegateRequest]],
    ) -> None:
        self.sup = sup
        self.planning = Planning(sup)
        self.moved = moved
        self.request = request

    async def plan(self, params: dict[str, Any]) -> dict[str, Any]:
        """Propose a plan for ``goal``; read the planner ``id``; or approve it (``approve``)."""
        p.known(params, "goal", "cwd", "worker", "timeout", "id", "approve", "nodes", "reject")
        if "goal" in params:
            if any(k in params for k in ("id", "approve", "nodes", "reject")):
                raise p.RpcError(p.INVALID_PARAMS, "goal: give a goal or a planner's id")
            task_id = await self._propose(params)
        else:
            task_id = p.nonempty(params, "id", limit=200).strip()
            if p.flag(params, "reject"):
                if any(k in params for k in ("approve", "nodes", "timeout")):
                    raise p.RpcError(p.INVALID_PARAMS, "reject: alone with the planner's id")
                return await self._reject(task_id)
            if p.flag(params, "approve"):
                if "timeout" in params:
                    raise p.RpcError(p.INVALID_PARAMS, "timeout: not with approve")
                return await self._approve(task_id, params.get("nodes"))
            if "nodes" in params:
                raise p.RpcError(p.INVALID_PARAMS, "nodes: only with approve: true")
            if "cwd" in params or "worker" in params:
                raise p.RpcError(p.INVALID_PARAMS, "cwd, worker: only with a goal")
        timeout = p.number(params, "timeout", lo=0, hi=PLAN_WAIT_MAX)
        if timeout is None and "goal" in params:
            return {"task": answers.line(await self.sup.get(task_id), worker=True)}
        if timeout:
            await waiting.wait(self.sup, [(await self.sup.get(task_id)).id], timeout)
        return _answer(await self.moved(self.planning.proposal(task_id), None))

    async def _propose(self, params: dict[str, Any]) -> str:
        fields: dict[str, Any] = {k: params[k] for k in ("cwd", "worker") if k in params}
        fields["instruction"] = p.nonempty(params, "goal", limit=100_000)
        req = await self.request(fields)  # the folder and the worker checked
        task = await self.moved(self.planning.propose(req.instruction, req.root, req.worker), None)
        return str(task.id)

    async def _approve(self, task_id: str, nodes: Any) -> dict[str, Any]:
        if nodes is not None and not isinstance(nodes, list):
            raise p.RpcError(p.INVALID_PARAMS, "nodes: a list of plan nodes")

        async def approving() -> Any:
            try:
                return await self.planning.approve(task_id, nodes)
            except PlanRefused as refused:  # said with every reason, not as a bare move
                raise _refusal(refused) from None

        created = await self.moved(approving(), None)
        return {"tasks": {key: answers.line(t, worker=True) for key, t in created.items()}}

    async def _reject(self, task_id: str) -> dict[str, Any]:
        async def rejecting() -> Any:
            try:
                return await self.planning.reject(task_id)
            except PlanRefused as refused:
                raise _refusal(refused) from None

        await self.moved(rejecting(), None)
        return _answer(await self.moved(self.planning.proposal(task_id), None))


def _refusal(refused: PlanRefused) -> p.RpcError:
    data: dict[str, Any] = {"problems": refused.problems}
    if refused.tasks:
        data["tasks"] = refused.tasks
        return p.RpcError(p.WRONG_STATE, f"{refused} (its tasks: {_listed(refused.tasks)})", data)
    return p.RpcError(p.WRONG_STATE, f"{refused}: " + "; ".join(refused.problems), data)


def _listed(tasks: dict[str, str]) -> str:
    return ", ".join(f"{k} {i}" for k, i in tasks.items())


def _answer(found: Proposal) -> dict[str, Any]:
    out: dict[str, Any] = {"task": answers.line(found.task, worker=True)}
    if found.state == "question":
        out["question"] = found.question
    elif found.state == "settled":
        out |= {"nodes": found.nodes, "problems": found.problems}
    if found.approved:
        out["approved"] = found.approved
    if found.rejected:
        out["rejected"] = True
    return out
