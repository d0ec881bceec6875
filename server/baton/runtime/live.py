"""An attempt this broker follows (:class:`Live`), and who is told of it (:class:`Watcher`).

Its batches of events go to the bus without waiting for their commit; :meth:`Live.confirm`
looks at them later (at each batch, and at each look of the watch): a commit that failed
stops the attempt, so no event is taken for stored that is not.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import deque
from collections.abc import Sequence
from typing import Protocol

from baton.agents.base import Parser
from baton.core.events import Event, EventMasker
from baton.core.lifecycle import Completion
from baton.core.outcome import Outcome
from baton.core.settle import Stop
from baton.core.task import Attempt, Task
from baton.process import spawn as procs
from baton.process.tail import Tailer
from baton.process.transport import Transport


@dataclasses.dataclass
class Live:
    """An attempt this broker is following."""

    task: Task
    attempt: Attempt
    transport: Transport
    record: procs.ProcessRecord
    tailer: Tailer
    outcome: Outcome
    parser: Parser
    started: float
    last_output: float
    side: bool = False  # a side attempt (review): it must not touch the task's session
    stop: Stop | None = None
    masking: EventMasker = dataclasses.field(default_factory=lambda: EventMasker(()))
    #: Batches handed to the bus without waiting, oldest first, until seen committed.
    unconfirmed: deque[asyncio.Future[list[Event]]] = dataclasses.field(default_factory=deque)

    def confirm(self) -> None:
        """Look at the batches handed to the bus so far: a commit that failed stops the
        attempt (its events are not stored: it must not go on as if they were). Called at
        each batch and by the watch, so no future needs a callback of its own."""
        while self.unconfirmed and self.unconfirmed[0].done():
            _stop_on_store_failure(self, self.unconfirmed.popleft())


class Watcher(Protocol):
    """Told of each attempt of a task this broker follows (not side attempts): its start
    (``past``: its stored events), each batch of its events, its end. The budgets are one
    (:class:`baton.runtime.budgets.BudgetWatch`)."""

    def following(self, live: Live, past: Sequence[Event]) -> None: ...
    def seen(self, live: Live, events: Sequence[Event]) -> None: ...
    def ended(self, live: Live) -> None: ...


def _stop_on_store_failure(live: Live, fut: asyncio.Future[list[Event]]) -> None:
    if fut.cancelled() or fut.exception() is None or live.stop is not None:
        return
    live.stop = Stop(
        Completion.WORKER_ERROR, f"could not record the agent's events: {fut.exception()}"
    )
    live.tailer.finish()
