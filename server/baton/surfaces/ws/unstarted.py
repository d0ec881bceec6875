"""The broker's methods for work that has not started: ``edit`` (a queued task changed, or
one cancelled before it started requeued) and ``ask`` (a read-only question about the
project, answered by a cheap worker).

Like :mod:`baton.surfaces.ws.settled`, they are part of the method table of
:class:`baton.surfaces.ws.methods.Methods`, which gives them its way of refusing a move
(``moved``), of checking a worker's name and of reading a delegate request; they only
read params, ask the Supervisor and shape the answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import baton.surfaces.ws.answers as answers
import baton.surfaces.ws.protocol as p
import baton.surfaces.ws.waiting as waiting
from baton.runtime import DelegateRequest, Supervisor, TaskEdit

Moved = Callable[[Awaitable[Any], str | None], Awaitable[Any]]
#: ``ask`` waits at most this many seconds for the answer (then answers with the task).
ASK_WAIT_MAX = 3600.0
#: The routing kind of a question ``ask`` sends (``[routing.ask]`` in the project's policy).
ASK_KIND = "ask"


class Unstarted:
    """``edit`` and ``ask``, for one broker."""

    def __init__(
        self,
        sup: Supervisor,
        moved: Moved,
        check_worker: Callable[[str, str], None],
        request: Callable[[dict[str, Any]], Awaitable[DelegateRequest]],
    ) -> None:
        self.sup = sup
        self.moved = moved
        self.check_worker = check_worker
        self.request = request

    async def edit(self, params: dict[str, Any]) -> dict[str, Any]:
        """Change a task that has not started (its ``instruction``, ``title``, ``worker``,
        ``model``, ``dependsOn``, ``scope``; an empty list clears one), or requeue one
        cancelled before it started (with or without changes)."""
        p.known(params, "id", "instruction", "title", "worker", "model", "dependsOn", "scope")
        tid = p.nonempty(params, "id", limit=200).strip()
        instruction = params.get("instruction")
        if instruction is not None:
            instruction = p.nonempty(params, "instruction")
        worker = p.opt_text(params, "worker", 200)
        if worker is not None:
            self.check_worker(worker, (await self.sup.get(tid)).root)
        change = TaskEdit(
            instruction=instruction,
            title=p.opt_text(params, "title", 500),
            worker=worker,
            model=p.opt_text(params, "model", 200),
            depends_on=p.texts(params, "dependsOn", limit=100),
            scope=p.texts(params, "scope", limit=200),
        )
        task = await self.moved(self.sup.edit(tid, change), tid)
        return {"task": answers.line(task, worker=True)}

    async def ask(self, params: dict[str, Any]) -> dict[str, Any]:
        """A question about the project (``question``), routed as kind ``ask`` and run
        read-only: whatever its checkout holds at the end is dropped, never offered for
        review. With ``timeout`` (seconds), waits for the answer: ``{task, answer}``."""
        p.known(params, "question", "cwd", "worker", "model", "targets", "timeout")
        fields = {k: v for k, v in params.items() if k not in ("question", "timeout")}
        fields["instruction"] = p.nonempty(params, "question", limit=100_000)
        req = await self.request(fields)
        timeout = p.number(params, "timeout", lo=0, hi=ASK_WAIT_MAX)
        asked = DelegateRequest(
            instruction=req.instruction,
            root=req.root,
            action="explain",
            kind=ASK_KIND,
            targets=req.targets,
            worker=req.worker,
            model=req.model,
            options={"read_only": True},
        )
        task = await self.moved(self.sup.delegate(asked), None)
        if timeout is None:
            return {"task": answers.line(task, worker=True)}
        woke = await waiting.wait(self.sup, [task.id], timeout)
        task = await self.sup.get(task.id)
        out: dict[str, Any] = {"task": answers.line(task, worker=True)}
        if "timeout" in woke:
            out["timeout"] = timeout
        elif task.summary:
            out["answer"] = task.summary
        return out
