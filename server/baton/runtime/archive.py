"""Archiving: settled tasks the user no longer wants to see in task lists.

An archived task keeps its whole record (events, attempts, diff, decisions, the ledger's
row); task lists leave it out unless asked for archived ones, and it is still found by its
id. Only a settled task is archived: one that runs, waits or is in review is refused. A
task that goes back to work (retry, handoff) or to review is listed again
(:meth:`baton.runtime.book.Book.move`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from baton.core.lifecycle import SETTLED, TaskState
from baton.core.task import Task
from baton.runtime.book import Book
from baton.runtime.broker import TaskError
from baton.store import Store

S = TaskState


async def archive(book: Book, task_ids: Sequence[str], *, undo: bool = False) -> list[Task]:
    """Archive the tasks (or, ``undo``, unarchive them): all of them or, when one may not be,
    none. Returns them as they are now."""
    tasks = [await book.get(task_id) for task_id in dict.fromkeys(task_ids)]
    if not undo:
        for task in tasks:
            if task.state not in SETTLED:
                raise TaskError(f"task {task.id} is {task.state}: {_not_yet(task.state)}")
    at = None if undo else time.time()
    states = SETTLED if not undo else list(S)
    ids = [t.id for t in tasks]
    changed = set(await book.store.call(Store.set_archived, ids, at, states))
    if not undo and len(changed) < len(ids):  # moved on meanwhile: put back what changed
        await book.store.call(Store.set_archived, list(changed), None, list(S))
        moved = next(t for t in ids if t not in changed)
        raise TaskError(f"task {moved} is no longer settled; nothing was archived")
    done = []
    for task in tasks:
        fresh = await book.fresh(task.id)
        fresh.archived_at = at
        await book.log(fresh, "unarchived by the user" if undo else "archived by the user")
        done.append(fresh)
    return done


def _not_yet(state: TaskState) -> str:
    if state == S.REVIEW:
        return "only a settled task is archived; accept or reject its hunks first"
    return "only a settled task is archived; cancel it first, or wait until it settles"
