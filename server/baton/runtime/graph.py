"""Tasks that depend on others: a small graph delegated in one call, and compared tasks.

A task delegated ``after`` others waits in ``queued`` until all of them are accepted
(applied or answered); one of them rejected, failed or cancelled cancels it. Of a group of
compared tasks (one brief to several workers), accepting one closes the others.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from baton.core.diff import FileDiff, HunkState
from baton.core.lifecycle import SETTLED, Completion, TaskState
from baton.core.task import Task
from baton.runtime.book import Book
from baton.runtime.broker import TaskError
from baton.runtime.requests import GraphNode
from baton.store import Store, UnknownTask

S = TaskState
#: A prerequisite in one of these states lets its dependents start...
SATISFIED = frozenset({S.APPLIED, S.ANSWERED})
#: ...and in one of these, cancels them.
BLOCKING = frozenset({S.REJECTED, S.FAILED, S.CANCELLED})


def in_order(nodes: Sequence[GraphNode]) -> list[GraphNode]:
    """The nodes, each after the nodes it comes ``after``; cycles and unknown keys refused."""
    by_key = {n.key: n for n in nodes}
    if len(by_key) != len(nodes):
        raise TaskError("graph node keys must be unique")
    for n in nodes:
        unknown = [k for k in n.after if k not in by_key]
        if unknown:
            raise TaskError(f"node {n.key!r} comes after unknown node(s) {unknown}")
    order: list[GraphNode] = []
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(key: str, path: tuple[str, ...]) -> None:
        if state.get(key) == 2:
            return
        if state.get(key) == 1:
            raise TaskError("the graph has a cycle: " + " → ".join((*path, key)))
        state[key] = 1
        for dep in by_key[key].after:
            visit(dep, (*path, key))
        state[key] = 2
        order.append(by_key[key])

    for n in nodes:
        visit(n.key, ())
    return order


class Dependents:
    """The queued tasks of this broker that wait for prerequisites."""

    def __init__(self, book: Book, start: Callable[[Task], None]) -> None:
        self.book = book
        self.start = start
        self.waiting: dict[str, Task] = {}

    def add(self, task: Task) -> None:
        self.waiting[task.id] = task

    async def release(self) -> None:
        """Start waiting tasks whose prerequisites were all accepted; cancel those whose
        prerequisites were rejected or failed."""
        for task_id, task in list(self.waiting.items()):
            if task.state != S.QUEUED:
                self.waiting.pop(task_id, None)
                continue
            deps = list(task.options.get("depends_on") or [])
            states = {d: (await self.book.store.call(Store.get_task, d)).state for d in deps}
            blocked = {d: st for d, st in states.items() if st in BLOCKING}
            ready = all(st in SATISFIED for st in states.values())
            if (blocked or ready) and self.waiting.pop(task_id, None) is None:
                continue  # another pass (tick or event) took it meanwhile
            if blocked:
                why = ", ".join(f"{d} is {st}" for d, st in blocked.items())
                await self.book.move(
                    task, S.CANCELLED, f"prerequisite not accepted: {why}", Completion.CANCELLED
                )
            elif ready:
                await self.book.log(task, "prerequisites accepted: " + ", ".join(deps))
                self.start(task)


async def close_group(
    winner: Task,
    members: Sequence[Task],
    *,
    diff: Callable[[str], Awaitable[tuple[list[FileDiff], bool]]],
    reject: Callable[[str], Awaitable[object]],
    cancel: Callable[[str], Awaitable[object]],
    log: Callable[[Task, str, str], Awaitable[None]],
) -> None:
    """A compared task was accepted: reject the others still in review, cancel the rest."""
    for other in members:
        if other.id == winner.id:
            continue
        try:
            if other.state == S.REVIEW:
                files, _ = await diff(other.id)
                if not any(h.state == HunkState.ACCEPTED for f in files for h in f.hunks):
                    await reject(other.id)
            elif other.state not in SETTLED:
                await cancel(other.id)
        except (TaskError, UnknownTask) as exc:
            await log(other, f"could not close the comparison: {exc}", "warning")
