"""A planner's task graph in the editor: ``baton.plan``, ``baton.planApprove``,
``baton.planReject`` and the ``baton/plan`` notification.

``baton.plan`` with ``{goal, worker?, uri?}`` starts the planner (a task of its own, asked
for a JSON graph and run read-only; :class:`baton.runtime.Planning`) and answers at once
with its id. When the planner stops, the server sends ``baton/plan``: the proposed nodes and
everything wrong with them (``state: "proposed"``), or the question it asks (``"asks"``: the
question also comes as any task's does, and a reply sets the planner going again), or why it
ended without a plan (``"failed"``). ``baton.planApprove`` runs the graph (the nodes given,
e.g. edited by the user, are checked again) and answers the ids of its tasks; they come to
the editor as any tasks do. ``baton.planReject`` drops the proposal (a planner still at work
is cancelled). The planner's answer is never shown as an answer: its nodes are.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from baton.core.brief import title_of
from baton.core.events import Event, EventType
from baton.core.lifecycle import TaskState
from baton.runtime import Planning, PlanRefused, Proposal, TaskError
from baton.surfaces.lsp.documents import uri_to_path
from baton.surfaces.lsp.payloads import Args, failed, invalid
from baton.surfaces.lsp.progress import Progress
from baton.surfaces.lsp.server import BatonServer, Feature

log = logging.getLogger(__name__)
S = TaskState

PLAN = "baton.plan"
APPROVE = "baton.planApprove"
REJECT = "baton.planReject"
#: The notification of a planner that stopped.
NOTIFY = "baton/plan"
#: States in which a planner has stopped: with a plan, a question, or nothing.
STOPPED = frozenset(
    {S.ANSWERED, S.REVIEW, S.NEEDS_INPUT, S.FAILED, S.CANCELLED, S.INTERRUPTED, S.REJECTED}
)


def node_payload(i: int, node: object) -> dict[str, Any]:
    """A proposed node as ``baton/plan`` shows it, whatever the planner wrote (its problems
    say what is wrong): ``{key, title, instruction, worker, after, scope, kind}``."""
    raw: Mapping[str, Any] = node if isinstance(node, Mapping) else {}
    instruction = raw.get("instruction")
    text = instruction if isinstance(instruction, str) else ""

    def strings(value: object) -> list[str]:
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []

    key = raw.get("key")
    scope = raw.get("scope")
    return {
        "key": key if isinstance(key, str) and key else f"node {i + 1}",
        "title": title_of(text),
        "instruction": text,
        "worker": raw.get("worker") if isinstance(raw.get("worker"), str) else None,
        "after": strings(raw.get("after")),
        "scope": strings(scope) if isinstance(scope, list) else None,
        "kind": raw.get("kind") if isinstance(raw.get("kind"), str) else None,
    }


def payload(found: Proposal) -> dict[str, Any]:
    """The ``baton/plan`` notification of a planner that stopped: ``proposed`` (its nodes,
    and every problem with them: empty when it can be approved), ``asks`` (its question) or
    ``failed`` (no plan: ``message`` says why)."""
    out: dict[str, Any] = {
        "taskId": found.task.id,
        "goal": found.goal or found.task.title,
        "nodes": [],
    }
    if found.state == "question":
        return out | {"state": "asks", "question": found.question or "", "problems": []}
    if found.nodes is None:
        why = "; ".join(found.problems) or "the planner gave no plan"
        return out | {"state": "failed", "message": why, "problems": list(found.problems)}
    nodes = [node_payload(i, n) for i, n in enumerate(found.nodes)]
    return out | {"state": "proposed", "nodes": nodes, "problems": list(found.problems)}


class Plans(Feature):
    """The planners this editor started and nobody approved or rejected yet: each one's
    proposal is sent whenever it stops."""

    def __init__(self, server: BatonServer) -> None:
        self.server = server
        self.planners: set[str] = set()
        self.mine: set[str] = set()  # every planner this editor started, decided or not

    def owns(self, task_id: str) -> bool:
        """Whether the task is a planner this editor started (its answer is a plan, never
        shown as text, even once the plan is decided)."""
        return task_id in self.mine

    def on_event(self, event: Event) -> None:
        if event.task_id not in self.planners or event.type != EventType.STATE:
            return
        if event.data.get("to") in STOPPED:
            self.server.spawn(self.send(event.task_id), f"plan of {event.task_id}")

    async def send(self, task_id: str) -> dict[str, Any] | None:
        """Send ``baton/plan`` for the planner as it is now; None while it still works."""
        sup = self.server.supervisor
        if sup is None:
            return None
        task = await sup.get(task_id)
        if task.state not in STOPPED:
            return None
        found = await Planning(sup).proposal(task.id)
        if found.state == "working":
            return None
        data = payload(found)
        self.server.protocol.notify(NOTIFY, data)
        return data


def _root(ls: BatonServer, uri: str | None) -> Path:
    if uri is not None:
        path = uri_to_path(uri)
        if path is None or not path.is_absolute():
            raise invalid(f"{PLAN}: uri must be a file: URI, got {uri!r}")
        return path if path.is_dir() else ls.root_for(path)
    folders = ls.folders()
    if not folders:
        raise invalid(f"{PLAN}: no workspace folder is open: say where to plan (uri)")
    return folders[0]


async def plan(ls: BatonServer, args: Args) -> Any:
    """``{goal, worker?, uri?}`` → ``{taskId, state, title}``: the planner, started."""
    goal = args.text("goal")
    worker = args.optional_text("worker")
    root = _root(ls, args.optional_text("uri"))
    sup = await ls.broker()
    plans = ls.get_feature(Plans)
    try:
        task = await Planning(sup).propose(goal, root, worker)
    except (TaskError, ValueError) as exc:
        raise failed(exc) from None
    ls.roots.add(task.root)
    plans.planners.add(task.id)
    plans.mine.add(task.id)
    if task.state in STOPPED:  # it stopped before its events could be seen
        await plans.send(task.id)
    return {"taskId": task.id, "state": str(task.state), "title": task.title}


def _nodes(args: Args) -> list[Any] | None:
    value = args.obj.get("nodes")
    if value is None:
        return None
    if not isinstance(value, list):
        raise invalid(f"{APPROVE}: nodes must be a list of plan nodes, got {type(value).__name__}")
    return value


async def approve(ls: BatonServer, args: Args) -> Any:
    """``{taskId, nodes?}`` → ``{taskId, tasks: {key: id}}``: the graph, running."""
    task_id = args.task_id()
    nodes = _nodes(args)
    sup = await ls.broker()
    try:
        tasks = await Planning(sup).approve(task_id, nodes)
    except PlanRefused as exc:
        raise failed(TaskError(f"{exc}: {'; '.join(exc.problems)}")) from None
    except (TaskError, ValueError) as exc:
        raise failed(exc) from None
    progress = ls.get_feature(Progress)
    for task in tasks.values():
        ls.roots.add(task.root)
        progress.follow(task.id, task.title, task.state)
    ls.get_feature(Plans).planners.discard(task_id)
    return {"taskId": task_id, "tasks": {key: t.id for key, t in tasks.items()}}


async def reject(ls: BatonServer, args: Args) -> Any:
    """``{taskId}`` → ``{taskId, state}``: the proposal dropped (nothing of it runs)."""
    task_id = args.task_id()
    sup = await ls.broker()
    task = await sup.get(task_id)
    ls.get_feature(Plans).planners.discard(task.id)
    try:
        task = await Planning(sup).reject(task.id)  # recorded: no surface approves it now
    except PlanRefused as refused:
        raise TaskError(f"{refused}: " + "; ".join(refused.problems)) from None
    return {"taskId": task.id, "state": str(task.state), "rejected": True}
