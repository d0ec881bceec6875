"""The ``project`` tool of ``baton mcp``: what a lead agent does to the project rather than to
one task, each op a websocket method.

- ``plan`` (``text``: the goal, ``worker``: the planner) delegates a planner and waits for
  it (``plan`` with ``timeout``): ``{task, nodes, problems}``, ``{task, question}`` (reply
  with the ``task`` tool, then ``plan`` with its ``id``) or ``{task}`` still working; with
  ``id`` instead of a goal it reads that planner the same way.
- ``approve`` (``id``, ``nodes``: an edited plan) runs the plan as a graph: ``{tasks}``.
- ``love`` shows the project's default worker, or with ``worker`` sets it in the project's
  file — never the user's own config (``global``) nor a model: those stay with
  ``baton love``.
- ``bench`` (``text``: a suite file, ``worker``: the workers, comma-separated) starts
  ``baton bench``: ``{run, suite, tasks}``; with ``id`` (a run) it reads that run's table.
- ``clean`` is ``baton clean``; ``memory`` lists the project's facts, adds ``text`` or
  removes fact ``id``; ``health`` is the broker's ``health``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from baton.errors import InvalidInput

#: The ops, each with the parameters it takes (beyond ``op``).
OPS: dict[str, tuple[str, ...]] = {
    "plan": ("text", "id", "worker"),
    "approve": ("id", "nodes"),
    "bench": ("text", "worker", "id"),
    "love": ("worker",),
    "clean": (),
    "memory": ("text", "id"),
    "health": (),
}
#: Seconds ``plan`` waits for the planner to settle or ask; then it answers with its line.
PLAN_WAIT = 600.0

Call = Callable[..., Awaitable[Any]]


class ProjectError(InvalidInput, ValueError):
    """A call of the tool that makes no sense (the message says why)."""


async def project(call: Call, folder: Path, op: str, **given: Any) -> dict[str, Any]:
    """Run ``op`` with the parameters ``given`` (None: not given) over ``call`` (a websocket
    method's name and params); the answer is an object, as the tool's output schema says."""
    if op not in OPS:
        raise ProjectError(f"op: {op!r} is not one of: {', '.join(OPS)}")
    extra = [k for k, v in given.items() if v is not None and k not in OPS[op]]
    if extra:
        raise ProjectError(f"op {op} takes no {', '.join(extra)}")
    text, task_id = given.get("text"), given.get("id")
    if op == "plan":
        if (text is None) == (task_id is None):
            raise ProjectError("op plan needs text (the goal) or id (a planner), not both")
        if text is not None:
            worker = given.get("worker")
            found: dict[str, Any] = await call(
                "plan", goal=text, cwd=str(folder), worker=worker, timeout=PLAN_WAIT
            )
            return found
        if given.get("worker") is not None:
            raise ProjectError("op plan takes a worker for a new planner only")
        return dict(await call("plan", id=str(task_id), timeout=PLAN_WAIT))
    if op == "approve":
        if task_id is None:
            raise ProjectError("op approve needs id: the planner")
        return dict(await call("plan", id=str(task_id), approve=True, nodes=given.get("nodes")))
    if op == "bench":
        if (text is None) == (task_id is None):
            raise ProjectError("op bench needs text (a suite file) or id (a run), not both")
        if task_id is not None:
            if given.get("worker") is not None:
                raise ProjectError("op bench takes workers for a new run only")
            return dict(await call("bench", run=str(task_id)))
        workers = [w.strip() for w in str(given.get("worker") or "").split(",") if w.strip()]
        if not workers:
            raise ProjectError("op bench needs worker: the workers, comma-separated")
        return dict(await call("bench", suite=str(text), workers=workers, cwd=str(folder)))
    if op == "love":
        return dict(await call("love", worker=given.get("worker"), root=str(folder)))
    if op in ("clean", "health"):
        return dict(await call(op))
    if text is not None and task_id is not None:
        raise ProjectError("op memory adds text or removes id, not both")
    memory_op, fact = "list", None
    if text is not None:
        memory_op = "add"
    elif task_id is not None:
        memory_op = "remove"
        try:
            fact = int(task_id)
        except (TypeError, ValueError):
            raise ProjectError(f"id: {task_id!r} is not a fact's number") from None
    res = await call("memory", op=memory_op, text=text, id=fact, root=str(folder))
    return {"memory": res["memory"]}
