"""Groups of accounts at run time (:mod:`baton.core.groups` decides): the live tasks per
group, read for each routing decision, and the end of a shift, checked once a second, which
interrupts the work still running on the group's accounts once its grace is over.

An interrupted attempt is stopped the way cancel stops one (the agent's process tree), and
the task becomes ``interrupted`` with its checkout and session kept: ``baton retry`` goes
on in it. The stop is recorded on the attempt before the agent is signalled, so a broker
killed in between settles it the same way when it adopts the task.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from datetime import datetime

from baton.config.settings import Settings
from baton.core.groups import Group, closed, groups_of, zone
from baton.core.lifecycle import ACTIVE, Completion
from baton.core.settle import Stop
from baton.core.task import Task
from baton.errors import BatonError
from baton.runtime.attempts import Attempts
from baton.runtime.book import Book
from baton.store import Store

log = logging.getLogger(__name__)


def _provider(settings: Settings, task: Task) -> str:
    profile = settings.profiles.get(task.worker)
    return profile.provider if profile is not None else ""


def count_live(settings: Settings, tasks: Iterable[Task]) -> dict[str, int]:
    """Tasks live now per group (``tasks``: those queued to verifying, of every project)."""
    live: dict[str, int] = {}
    for t in tasks:
        for g in groups_of(settings.groups, _provider(settings, t), t.model):
            live[g.name] = live.get(g.name, 0) + 1
    return live


async def live_per_group(book: Book, settings: Settings) -> dict[str, int]:
    if not settings.groups:
        return {}
    states = [str(s) for s in ACTIVE]
    tasks: list[Task] = await book.store.call(lambda s: s.list_tasks(states=states, limit=None))
    return count_live(settings, tasks)


class GroupFull(BatonError):
    """Another broker took the place in a group between routing and storing (the reason)."""


def admission(settings: Settings, task: Task) -> Callable[[Store], None] | None:
    """The check a new task's insert runs inside its write transaction: the group's place
    the route counted on is still free. None without groups."""
    if not settings.groups:
        return None
    provider = _provider(settings, task)
    states = [str(s) for s in ACTIVE]

    def admit(store: Store) -> None:
        live = count_live(settings, store.list_tasks(states=states, limit=None))
        why = closed(settings.groups, provider, task.model, live, time.time())
        if why is not None:
            raise GroupFull(why)

    return admit


def _ended_at(g: Group, now: float) -> str:
    ended = g.last_end(now) or now
    return datetime.fromtimestamp(ended, zone(g.timezone)).strftime("%H:%M")


class Shifts:
    """Interrupts work on accounts whose group's shift has ended (past its grace)."""

    def __init__(
        self,
        attempts: Attempts,
        settings_of: Callable[[str], Settings | None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.attempts = attempts
        self.settings_of = settings_of
        self.clock = clock

    async def check(self) -> list[str]:
        """Stop what must stop now; the ids of the tasks interrupted."""
        now = self.clock()
        stopped = []
        for live in list(self.attempts.live.values()):
            if live.side or live.stop is not None:
                continue
            settings = self.settings_of(live.task.root)
            if settings is None or not settings.groups:
                continue
            task = live.task
            for g in groups_of(settings.groups, _provider(settings, task), task.model):
                if g.stops_work(now):
                    why = (
                        f"group {g.name}'s shift ended at {_ended_at(g, now)} {g.timezone}; "
                        "its work is kept: baton retry goes on"
                    )
                    await self.attempts.stop(live, Stop(Completion.INTERRUPTED, why))
                    stopped.append(task.id)
                    break
        return stopped
