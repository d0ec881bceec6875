"""Fanning committed events out to the websocket's subscribers.

Each committed batch is written to every subscription at once, in the bus's writer loop:
one frame built per distinct subscription and its bytes written to each connection, with
no queue or task per subscriber. A connection that stops reading (its unsent bytes pass
``send_buffer``) loses its subscriptions with an ``overflow`` notice instead of slowing
anyone down. Also here: the connection and subscription records the endpoint keeps.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.protocol import State

import baton.surfaces.ws.protocol as protocol
from baton.core.events import Event
from baton.surfaces.ws.frames import text_frame

log = logging.getLogger(__name__)


class Bucket:
    """A token bucket: ``take()`` is False when the connection sends too fast."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, float(burst)
        self.tokens, self.at = float(burst), time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


@dataclass(eq=False, slots=True)
class Watch:
    """A ``watch`` subscription: the tasks it wants (None: all)."""

    sid: int
    wanted: frozenset[str] | None
    #: Live events kept back while the stored ones are replayed; None once live.
    held: list[Event] | None = field(default_factory=list)


@dataclass(eq=False)
class Conn:
    ws: ServerConnection
    authed: bool
    bucket: Bucket
    inflight: set[asyncio.Task[Any]] = field(default_factory=set)
    subs: dict[int, Watch] = field(default_factory=dict)
    refused: int = 0  # consecutive rate-limited messages
    next_sub: int = 0  # subscription ids count per connection
    behind_since: float | None = None  # since when more than send_buffer is unsent


def spread(values: Iterable[float], count: str) -> dict[str, Any]:
    """``{count: n, median, p99, max}`` of ``values`` (milliseconds, rounded to µs)."""
    ordered = sorted(values)
    if not ordered:
        return {count: 0}

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)

    return {count: len(ordered), "median": pick(0.5), "p99": pick(0.99), "max": pick(1.0)}


MAX_BATCH = 256  # events per ``events`` notification
MAX_FRAME = 256 << 10  # bytes of events per notification (clients' default limit is 1 MiB)


class Fanout:
    """Events to subscribers: the frames, their writing, and the lag it takes."""

    def __init__(self, send_buffer: int, stalled: float) -> None:
        self.send_buffer = send_buffer
        self.stalled = stalled
        self._encoded: OrderedDict[tuple[str, int], str] = OrderedDict()
        self._lags: deque[float] = deque(maxlen=10_000)  # see lag

    def lag(self) -> dict[str, Any]:
        """Milliseconds from an event's commit stamp to its frame written to every
        subscriber, over the last batches fanned out (median, p99, max)."""
        return spread(self._lags, "batches")

    def on_commit(self, conns: Iterable[Conn], events: list[Event]) -> None:
        """Fan a committed batch out to every subscription at once, one frame each.

        Runs synchronously in the bus's writer loop: no queue or task per subscriber, and
        each distinct frame (same tasks wanted, same subscription id — ids count per
        connection, so every "watch all" connection's first subscription shares one) is
        built once and its bytes written to each connection. A connection that stopped
        reading (see ``send_buffer``) loses its subscriptions with an ``overflow``
        notice instead of slowing anyone down.
        """
        wanted: dict[frozenset[str] | None, list[Event]] = {}
        frames: dict[tuple[frozenset[str] | None, int], list[bytes]] = {}
        for conn in list(conns):
            for watch in list(conn.subs.values()):
                mine = wanted.get(watch.wanted)
                if mine is None:
                    mine = (
                        events
                        if watch.wanted is None
                        else [e for e in events if e.task_id in watch.wanted]
                    )
                    wanted[watch.wanted] = mine
                if not mine:
                    continue
                if watch.held is not None:
                    watch.held.extend(mine)
                    continue
                key = (watch.wanted, watch.sid)
                built = frames.get(key)
                if built is None:
                    built = frames[key] = self.frames(watch.sid, mine)
                try:
                    self.push(conn, watch, built)
                except Exception:  # one broken connection must not cost the others theirs
                    log.exception("could not push events to a subscriber; dropping it")
                    conn.subs.clear()
                    break
        if frames:
            self._lags.append((time.time() - min(e.ts for e in events)) * 1000)

    def frames(self, sid: int, events: list[Event]) -> list[bytes]:
        return [text_frame(self.note(sid, chunk).encode()) for chunk in self.chunks(events)]

    def chunks(self, events: list[Event]) -> Iterator[list[Event]]:
        """Events in order, in runs that fit one notification (count and size bounded)."""
        run: list[Event] = []
        size = 0
        for e in events:
            n = len(self.encode(e))
            if run and (len(run) >= MAX_BATCH or size + n > MAX_FRAME):
                yield run
                run, size = [], 0
            run.append(e)
            size += n
        if run:
            yield run

    def push(self, conn: Conn, watch: Watch, frames: list[bytes]) -> None:
        """Write whole frames to the connection now, unless it is closing or not reading."""
        ws = conn.ws
        if ws.protocol.state is not State.OPEN:
            return  # closing: the handler's end drops the connection
        transport = ws.transport
        unsent, limit = transport.get_write_buffer_size(), self.send_buffer
        if unsent <= limit:
            conn.behind_since = None
        elif conn.behind_since is None:
            conn.behind_since = time.monotonic()
        if conn.behind_since is not None and (
            time.monotonic() - conn.behind_since > self.stalled or unsent > 8 * limit
        ):
            conn.subs.pop(watch.sid, None)
            note = {"subscription": watch.sid, "message": "fell behind; catch up with events"}
            frames = [text_frame(protocol.notification("overflow", note).encode())]
        # What ``ws.send`` does for a text frame, minus waiting for the buffer to drain
        # (bounded above instead): whatever the protocol has queued goes first, then the
        # frames, whole, so they interleave safely with replies sent through ``ws.send``.
        # The server negotiates no extension (compression=None), so frames are plain.
        ws.send_data()
        for frame in frames:
            transport.write(frame)

    def encode(self, event: Event) -> str:
        key = (event.task_id, event.seq)
        body = self._encoded.get(key)
        if body is None:
            # imported here: the records' shapes are not needed until the broker has events
            # (a headless one listens before it imports them)
            import baton.surfaces.ws.views as views

            body = json.dumps(views.event_json(event), default=str)
            self._encoded[key] = body
            if len(self._encoded) > 4096:
                self._encoded.popitem(last=False)
        return body

    def note(self, sid: int, events: list[Event]) -> str:
        """One ``event`` notification, or one ``events`` notification carrying several."""
        if len(events) == 1:
            return (
                '{"jsonrpc": "2.0", "method": "event", "params": {"subscription": '
                f'{sid}, "event": {self.encode(events[0])}}}}}'
            )
        bodies = ", ".join(self.encode(e) for e in events)
        return (
            '{"jsonrpc": "2.0", "method": "events", "params": {"subscription": '
            f'{sid}, "events": [{bodies}]}}}}'
        )
