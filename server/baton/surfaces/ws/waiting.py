"""``wait``: block until the first of several tasks settles, and answer with its line.

What ``baton watch --json`` and the MCP ``watch`` tool stand on, so a lead agent polls
nothing. A task wakes the wait when it is found settled (or in review, or asking), and —
while the wait runs — when it hits a rate limit: the task then holds until the limit resets
and runs again by itself, and the watcher is told when (``retryIn``). Events come from this
broker's bus; every :data:`POLL` seconds the tasks are also read from the store, so a task
another broker supervises (its events never reach this bus) still wakes the wait.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import baton.surfaces.ws.answers as answers
from baton.core.events import Event
from baton.core.lifecycle import TaskState
from baton.core.task import Task

if TYPE_CHECKING:
    from baton.runtime import Supervisor

#: Seconds between reads of the waited-for tasks from the store.
POLL = 1.0


async def wait(sup: Supervisor, ids: list[str], timeout: float) -> dict[str, Any]:
    """``{"task": line}`` for the first of ``ids`` (full ids) to wake, else after ``timeout``
    seconds ``{"timeout": seconds, "tasks": [line, …]}``."""
    deadline = time.monotonic() + timeout
    sub = sup.subscribe(set(ids))
    live = True  # the subscription still delivers (it ends if it falls behind the bus)
    try:
        seen: dict[str, Task] = {}
        for tid in ids:  # read after subscribing: nothing slips in between
            task = seen[tid] = await sup.get(tid)
            if str(task.state) in answers.STOP:
                return {"task": answers.woke(task)}
        read_at = time.monotonic() + POLL
        while (left := deadline - time.monotonic()) > 0:
            pause = min(left, max(0.0, read_at - time.monotonic()))
            event: Event | None = None
            if live:
                try:
                    event = await asyncio.wait_for(sub.get(), pause)
                except TimeoutError:
                    pass
                else:
                    live = event is not None
            else:
                await asyncio.sleep(pause)
            if event is not None and answers.woke_by(event):
                return {"task": answers.woke(await sup.get(event.task_id), event)}
            if time.monotonic() < read_at:
                continue
            read_at = time.monotonic() + POLL
            for tid in ids:
                task = await sup.get(tid)
                before, seen[tid] = seen[tid].state, task
                limited = task.state == TaskState.RATE_LIMITED and before != task.state
                if str(task.state) in answers.STOP or limited:
                    return {"task": answers.woke(task)}
        return {"timeout": timeout, "tasks": [answers.line(seen[t]) for t in ids]}
    finally:
        sub.close()
