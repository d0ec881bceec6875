"""Live transcripts: ``baton.transcript`` and the ``baton/transcript`` notifications.

A client asks for a task's transcript (``{"taskId", "follow": true}``) and gets its lines
and the sequence number of the last event they show; while it follows, each change is sent
as ``baton/transcript`` ``{taskId, since, seq, start, lines}``: the lines from ``start`` on
replace the client's, which must be the ones of event ``since``. A client that finds its
lines are of another ``seq`` asks again. Changes are coalesced (one notification per
``delay`` at most per task). Everything here runs on the event loop; reading a task's
events goes through the broker's worker threads.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from baton.core.events import Event
from baton.core.transcript import Transcript
from baton.surfaces.lsp.server import BatonServer, Feature

log = logging.getLogger(__name__)

TRANSCRIPT = "baton/transcript"
#: The most transcripts followed at once (the oldest is dropped: its client gets no more
#: changes until it asks again).
MOST_FOLLOWED = 32


@dataclass
class _Followed:
    transcript: Transcript | None = None  # None while its events are read
    early: list[Event] = field(default_factory=list)  # events that came during that read
    sent: int = 0  # the seq the client has


class Transcripts(Feature):
    """The transcripts this editor follows, kept up to date from the broker's events."""

    def __init__(self, server: BatonServer, delay: float = 0.1) -> None:
        self.server = server
        self.delay = delay
        self.followed: dict[str, _Followed] = {}
        self._dirty: set[str] = set()
        self._flush: asyncio.TimerHandle | None = None

    def on_event(self, event: Event) -> None:
        """Fold a committed event into the transcript following its task (cheap)."""
        followed = self.followed.get(event.task_id)
        if followed is None:
            return
        if followed.transcript is None:
            followed.early.append(event)
            return
        followed.transcript.add(event)
        self._dirty.add(event.task_id)
        if self._flush is None:
            self._flush = asyncio.get_running_loop().call_later(self.delay, self.flush)

    async def open(self, task_id: str, follow: bool) -> dict[str, Any]:
        """The transcript of a task now; with ``follow``, its changes are sent from now on
        (without, it is no longer followed)."""
        sup = await self.server.broker()
        task = await sup.get(task_id)
        if not follow:
            self.followed.pop(task.id, None)
            transcript = Transcript.of(task, await sup.events(task.id))
            return self._result(task.id, transcript, False)
        followed = self.followed.get(task.id)
        if followed is None or followed.transcript is None:
            followed = _Followed()
            self.followed[task.id] = followed
            while len(self.followed) > MOST_FOLLOWED:
                del self.followed[next(iter(self.followed))]
            events = await sup.events(task.id)
            if self.followed.get(task.id) is not followed:  # dropped or replaced meanwhile
                return self._result(task.id, Transcript.of(task, events), False)
            transcript = Transcript.of(task, events)
            for event in followed.early:
                transcript.add(event)
            followed.transcript, followed.early = transcript, []
        transcript = followed.transcript
        transcript.take()  # the client gets every line now
        followed.sent = transcript.seq
        return self._result(task.id, transcript, True)

    def _result(self, task_id: str, transcript: Transcript, following: bool) -> dict[str, Any]:
        return {
            "taskId": task_id,
            "seq": transcript.seq,
            "lines": list(transcript.lines),
            "following": following,
        }

    def flush(self) -> None:
        self._flush = None
        dirty, self._dirty = self._dirty, set()
        for task_id in sorted(dirty):
            followed = self.followed.get(task_id)
            if followed is None or followed.transcript is None:
                continue
            taken = followed.transcript.take()
            if taken is None:
                continue
            start, lines = taken
            seq = followed.transcript.seq
            self.server.protocol.notify(
                TRANSCRIPT,
                {"taskId": task_id, "since": followed.sent, "seq": seq, "start": start,
                 "lines": lines},
            )  # fmt: skip
            followed.sent = seq

    async def stop(self) -> None:
        self.close()

    def close(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        self.followed.clear()
