"""``workspace/executeCommand`` handlers for tasks whose agent stopped: ``baton.handoff``
(to another worker, same task) and ``baton.archive`` (out of ``baton.tasks``, history kept).

Registered with the other commands in :mod:`baton.surfaces.lsp.commands`, which turns a
refusal into ``RequestFailed``; see docs/reference/protocol.md.
"""

from __future__ import annotations

from typing import Any

from baton.core.task import next_moves
from baton.surfaces.lsp.payloads import Args, invalid
from baton.surfaces.lsp.progress import Progress
from baton.surfaces.lsp.server import BatonServer


async def handoff(ls: BatonServer, args: Args) -> Any:
    """``{taskId, worker?}`` → ``{taskId, state, worker, next}``."""
    sup = await ls.broker()
    task = await sup.get(args.task_id())
    worker = args.optional_text("worker")
    if worker is not None and worker not in sup.profiles_for(task.root):
        raise invalid(f"baton.handoff: unknown worker {worker!r}")
    ls.get_feature(Progress).follow(task.id, task.title, task.state)
    task = await sup.handoff(task.id, worker)
    return {
        "taskId": task.id,
        "state": str(task.state),
        "worker": task.worker,
        "next": next_moves(task),
    }


async def archive(ls: BatonServer, args: Args) -> Any:
    """``{taskIds, undo?}`` (or ``{taskId}``) → ``{archived | unarchived: [ids]}``."""
    sup = await ls.broker()
    ids = args.texts("taskIds") or [args.task_id()]
    undo = args.flag("undo")
    tasks = await sup.archive(ids, undo=undo)
    return {"unarchived" if undo else "archived": [t.id for t in tasks]}
