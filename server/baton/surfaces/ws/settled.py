"""The broker's methods for tasks whose agent has stopped: ``handoff`` (to another worker,
same task), ``complete`` (up for review on the user's word), ``archive`` (out of task
lists, history kept) and ``clean`` (what settled tasks left on disk).

They are part of the method table of :class:`baton.surfaces.ws.methods.Methods`, which
gives them its way of refusing a move (``moved``: a refusal becomes ``WRONG_STATE`` naming
the moves that make sense) and its check of a worker's name; like its methods, they only
read params, ask the Supervisor and shape the answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import baton.surfaces.ws.answers as answers
import baton.surfaces.ws.protocol as p
from baton.runtime import Supervisor

Moved = Callable[[Awaitable[Any], str | None], Awaitable[Any]]
#: ``archive`` takes at most this many ids at once.
MAX_ARCHIVE = 1000


class Settled:
    """``handoff``, ``complete``, ``archive`` and ``clean``, for one broker."""

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

    async def complete(self, params: dict[str, Any]) -> dict[str, Any]:
        """A failed, cancelled or interrupted task whose checkout holds changes goes to
        review, with the user's ``evidence`` that the work landed recorded on it."""
        p.known(params, "id", "evidence")
        tid = p.nonempty(params, "id", limit=200).strip()
        evidence = p.nonempty(params, "evidence", limit=4000).strip()
        task = await self.moved(self.sup.complete(tid, evidence), tid)
        files, _ = await self.sup.diff(task.id)
        return {"task": answers.line(task), "files": [f.path for f in files]}

    async def archive(self, params: dict[str, Any]) -> dict[str, Any]:
        """Archive settled tasks (``ids``): ``tasks`` leaves them out unless asked for
        ``archived`` ones; ``undo`` lists them again. All of them or, when one is not settled,
        none (``WRONG_STATE`` naming it)."""
        p.known(params, "ids", "undo")
        ids = p.texts(params, "ids", limit=MAX_ARCHIVE)
        if not ids or not all(i.strip() for i in ids):
            raise p.RpcError(p.INVALID_PARAMS, "ids: required (one or more task ids)")
        undo = p.flag(params, "undo")
        one = ids[0].strip() if len(ids) == 1 else None
        tasks = await self.moved(self.sup.archive([i.strip() for i in ids], undo=undo), one)
        key = "unarchived" if undo else "archived"
        return {key: [t.id for t in tasks], "tasks": [answers.line(t) for t in tasks]}

    async def clean(self, params: dict[str, Any]) -> dict[str, Any]:
        """Remove what Baton keeps on disk that no task needs, and apply ``[retention]``
        (:mod:`baton.runtime.cleaning`); what it removed."""
        p.known(params)
        return (await self.sup.clean()).to_json()
