"""The dashboard's live sockets: the broker's committed events, pushed in batches.

The bus calls :meth:`Live.on_commit` with each committed batch, after the agents'
websocket has fanned it out; it only keeps the events and wakes one background job, so the
agents' path pays a list append. The job writes at most one ``events`` frame per
:data:`INTERVAL` to every open page (everything committed since the last, the events
encoded once — by the agents' fan-out, whose cache it shares), then one ``tasks`` frame
with the rows of the tasks whose state or usage changed. A page that stops reading (over
``send_buffer`` unsent for ``stalled`` seconds, or 8 times it) is sent ``overflow`` and
closed: it reloads the snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

from baton.core.events import Event, EventType
from baton.surfaces.ws.frames import text_frame

log = logging.getLogger(__name__)

#: Seconds between two frames of events to a page, at least.
INTERVAL = 0.1
#: Bytes of encoded events per frame.
MAX_FRAME = 512 << 10
#: Events whose task's row is sent again after them.
_ROW_CHANGES = frozenset({EventType.STATE, EventType.USAGE, EventType.DIFF})

Rows = Callable[[Sequence[str]], Awaitable[list[dict[str, Any]]]]


class Live:
    """The open pages and the job that writes to them."""

    def __init__(
        self,
        encode: Callable[[Event], str],
        rows: Rows,
        *,
        send_buffer: int = 4 << 20,
        stalled: float = 2.0,
        interval: float = INTERVAL,
    ) -> None:
        self.encode = encode
        self.rows = rows
        self.send_buffer = send_buffer
        self.stalled = stalled
        self.interval = interval
        self.pages: dict[ServerConnection, float | None] = {}  # → behind since
        self._pending: list[Event] = []
        self._wake = asyncio.Event()
        self._job: asyncio.Task[None] | None = None
        self.frames = 0  # events frames written (all pages count once)

    def on_commit(self, events: list[Event]) -> None:
        """A committed batch: kept for the next frame (nothing else happens here)."""
        if self.pages:
            self._pending.extend(events)
            self._wake.set()

    def start(self) -> None:
        if self._job is None:
            self._job = asyncio.get_running_loop().create_task(self._run(), name="dashboard-live")

    async def close(self) -> None:
        if self._job is not None:
            self._job.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._job
            self._job = None
        for ws in list(self.pages):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(1001, "the broker is stopping"), 2.0)
        self.pages.clear()

    async def serve(self, ws: ServerConnection) -> None:
        """One page's socket: ``hello``, then pushes until it closes; what it sends is
        ignored."""
        self.pages[ws] = None
        try:
            self._write(ws, [_frame({"type": "hello", "now": time.time()})])
            async for _ in ws:
                pass
        except ConnectionClosed:
            pass
        finally:
            self.pages.pop(ws, None)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        last = 0.0
        while True:
            await self._wake.wait()
            delay = last + self.interval - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            self._wake.clear()
            events, self._pending = self._pending, []
            last = loop.time()
            if not events or not self.pages:
                continue
            try:
                await self._flush(events)
            except asyncio.CancelledError:
                raise
            except Exception:  # a page must never stop the broker's job
                log.exception("could not push to the dashboard's pages")

    async def _flush(self, events: list[Event]) -> None:
        frames = [text_frame(self._note(chunk).encode()) for chunk in self._chunks(events)]
        self.frames += len(frames)
        for ws in list(self.pages):
            self._write(ws, frames)
        changed = list(dict.fromkeys(e.task_id for e in events if e.type in _ROW_CHANGES))
        if changed:
            rows = await self.rows(changed)
            tasks = _frame({"type": "tasks", "tasks": rows})
            for ws in list(self.pages):
                self._write(ws, [tasks])

    def _chunks(self, events: list[Event]) -> Iterator[list[str]]:
        run: list[str] = []
        size = 0
        for e in events:
            body = self.encode(e)
            if run and size + len(body) > MAX_FRAME:
                yield run
                run, size = [], 0
            run.append(body)
            size += len(body)
        if run:
            yield run

    @staticmethod
    def _note(bodies: list[str]) -> str:
        return '{"type": "events", "events": [' + ", ".join(bodies) + "]}"

    def _write(self, ws: ServerConnection, frames: list[bytes]) -> None:
        """Write whole frames now (as the agents' fan-out does), unless the page closes or
        stopped reading: then ``overflow`` and the socket is closed."""
        if ws.protocol.state is not State.OPEN:
            return
        transport = ws.transport
        unsent = transport.get_write_buffer_size()
        behind = self.pages.get(ws)
        now = time.monotonic()
        if unsent <= self.send_buffer:
            behind = None
        elif behind is None:
            behind = now
        self.pages[ws] = behind
        if behind is not None and (now - behind > self.stalled or unsent > 8 * self.send_buffer):
            self.pages.pop(ws, None)
            ws.send_data()
            transport.write(_frame({"type": "overflow"}))
            asyncio.get_running_loop().create_task(ws.close(1008, "fell behind"))
            return
        ws.send_data()
        for frame in frames:
            transport.write(frame)


def _frame(message: dict[str, Any]) -> bytes:
    return text_frame(json.dumps(message, default=str).encode())
