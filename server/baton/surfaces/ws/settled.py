"""The broker's methods for a task whose agent has stopped: ``handoff`` (to another worker,
same task).

They are part of the method table of :class:`baton.surfaces.ws.methods.Methods`, which
gives them its way of refusing a move (``moved``: a refusal becomes ``WRONG_STATE`` naming
the moves that make sense) and its check of a worker's name; like its methods, they only
read params, ask the Supervisor and shape the answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from baton.runtime import Supervisor
from baton.surfaces.ws import answers
from baton.surfaces.ws import protocol as p

Moved = Callable[[Awaitable[Any], str], Awaitable[Any]]


class Settled:
    """``handoff``, for one broker."""

    def __init__(
        self, sup: Supervisor, moved: Moved, check_worker: Callable[[str, str], None]
    ) -> None:
        self.sup = sup
        self.moved = moved
        self.check_worker = check_worker

    async def handoff(self, params: dict[str, Any]) -> dict[str, Any]:
        """Hand a failed, cancelled, interrupted or rate-limited task to another worker
        (``worker``; without it, the project's routing picks the next one): same id, its
        history kept; the new worker starts a fresh session with the brief."""
        p.known(params, "id", "worker")
        tid = p.nonempty(params, "id", limit=200).strip()
        worker = p.opt_text(params, "worker", 200)
        if worker is not None:
            self.check_worker(worker, (await self.sup.get(tid)).root)
        task = await self.moved(self.sup.handoff(tid, worker), tid)
        return {"task": answers.line(task, worker=True)}
