"""The dashboard's live sockets: the broker's committed events, pushed in batches.

The bus calls :meth:`Live.on_commit` with each committed batch, after the agents'
websocket has fanned it out; it only keeps the events and wakes one background job, so the
agents' path pays a list append. The job writes at most one ``events`` frame per
:data:`INTERVAL` to every open page (everything committed since the last, the events
encoded once — by the agents' fan-out, whose cache it shares), then one ``tasks`` frame
with the rows of the tasks whose state or usage changed; a page that follows a task's
transcript (``{"follow": [ids]}``) is sent its lines as :class:`Transcript` grows them, as
the editors are. A page that stops reading (over
``send_buffer`` unsent for ``stalled`` seconds, or 8 times it) is sent ``overflow`` and
closed: it reloads the snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

from baton.core.events import Event, EventType
from baton.core.task import Task
from baton.core.transcript import Transcript
from baton.errors import NotFound
from baton.surfaces.ws.frames import text_frame

log = logging.getLogger(__name__)

#: Seconds between two frames of events to a page, at least.
INTERVAL = 0.1
#: Bytes of encoded events per frame.
MAX_FRAME = 512 << 10
#: Events whose task's row is sent again after them.
_ROW_CHANGES = frozenset({EventType.STATE, EventType.USAGE, EventType.DIFF})

#: Tasks one page may follow the transcript of at once.
MAX_FOLLOWED = 4

Rows = Callable[[Sequence[str]], Awaitable[list[dict[str, Any]]]]
Load = Callable[[str], Awaitable[tuple[Task, list[Event]]]]


@dataclass(eq=False)
class Followed:
    """A task whose transcript a page follows: built from its stored events, then grown by
    the pushed ones (events met while it loads are kept and folded in after)."""

    task_id: str
    transcript: Transcript | None = None
    held: list[Event] = field(default_factory=list)


class Live:
    """The open pages and the job that writes to them."""

    def __init__(
        self,
        encode: Callable[[Event], str],
        rows: Rows,
        load: Load,
        *,
        send_buffer: int = 4 << 20,
        stalled: float = 2.0,
        interval: float = INTERVAL,
    ) -> None:
        self.encode = encode
        self.rows = rows
        self.load = load
        self.followed: dict[ServerConnection, dict[str, Followed]] = {}
        self.send_buffer = send_buffer
        self.stalled = stalled
        self.interval = interval
        self.pages: dict[ServerConnection, float | None] = {}  # → behind since
        self._pending: list[Event] = []
        self._wake = asyncio.Event()
        self._job: asyncio.Task[None] | None = None
        self.frames = 0  # events frames written (all pages count once)
        #: CPU seconds each stretch of the job's work took on the event loop's thread (a
        #: machine's other processes may stretch it further in wall time; see ``stats``).
        self._busy: deque[float] = deque(maxlen=10_000)

    def on_commit(self, events: list[Event]) -> None:
        """A committed batch: kept for the next frame (nothing else happens here)."""
        if self.pages:
            self._pending.extend(events)
            self._wake.set()

    def stats(self) -> dict[str, Any]:
        """Open pages, frames written, and the CPU milliseconds each stretch of the job's
        work took on the event loop (median, p99, max): what one flush can delay the
        agents' next batch by, on an idle core."""
        out: dict[str, Any] = {"pages": len(self.pages), "frames": self.frames}
        busy = sorted(self._busy)
        if busy:
            at = {"median": 0.5, "p99": 0.99, "max": 1.0}
            out["busy"] = {
                k: round(busy[min(len(busy) - 1, int(q * len(busy)))] * 1000, 3)
                for k, q in at.items()
            }
        return out

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
        """One page's socket: ``hello``, then pushes until it closes. The page may send
        ``{"follow": [ids]}`` (the tasks whose transcript it shows; ``[]`` for none);
        anything else it sends is ignored."""
        self.pages[ws] = None
        try:
            self._write(ws, [_frame({"type": "hello", "now": time.time()})])
            async for message in ws:
                with contextlib.suppress(ValueError):
                    asked = json.loads(message)
                    if isinstance(asked, dict) and "follow" in asked:
                        await self._follow(ws, asked["follow"])
        except ConnectionClosed:
            pass
        finally:
            self.pages.pop(ws, None)
            self.followed.pop(ws, None)

    async def _follow(self, ws: ServerConnection, ids: object) -> None:
        """Follow these tasks' transcripts (and no other): each new one's lines come whole
        first, then as they change."""
        wanted = [ids] if isinstance(ids, str) else ids if isinstance(ids, list) else []
        wanted = list(dict.fromkeys(i for i in wanted if isinstance(i, str)))[:MAX_FOLLOWED]
        mine = self.followed.setdefault(ws, {})
        for gone in set(mine) - set(wanted):
            del mine[gone]
        for task_id in [i for i in wanted if i not in mine]:
            followed = mine[task_id] = Followed(task_id)
            try:
                task, events = await self.load(task_id)
            except NotFound as exc:
                mine.pop(task_id, None)
                self._write(ws, [_frame({"type": "error", "taskId": task_id, "message": str(exc)})])
                continue
            if mine.get(task_id) is not followed:
                continue  # unfollowed meanwhile
            followed.transcript = Transcript.of(task, events)
            for e in followed.held:
                followed.transcript.add(e)  # those already read are ignored (by seq)
            followed.held = []
            frame = self._lines(followed)
            if frame:
                self._write(ws, [frame])

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
        began = time.thread_time()
        frames = [text_frame(self._note(chunk).encode()) for chunk in self._chunks(events)]
        self.frames += len(frames)
        for ws in list(self.pages):
            self._write(ws, frames)
        changed = list(dict.fromkeys(e.task_id for e in events if e.type in _ROW_CHANGES))
        if self.followed:
            self._grow_transcripts(events)
        self._busy.append(time.thread_time() - began)
        if changed:
            rows = await self.rows(changed)
            began = time.thread_time()
            tasks = _frame({"type": "tasks", "tasks": rows})
            for ws in list(self.pages):
                self._write(ws, [tasks])
            self._busy.append(time.thread_time() - began)

    def _grow_transcripts(self, events: list[Event]) -> None:
        by_task: dict[str, list[Event]] = {}
        for e in events:
            by_task.setdefault(e.task_id, []).append(e)
        for ws, mine in list(self.followed.items()):
            for followed in mine.values():
                new = by_task.get(followed.task_id)
                if not new:
                    continue
                if followed.transcript is None:
                    followed.held.extend(new)
                    continue
                for e in new:
                    followed.transcript.add(e)
                frame = self._lines(followed)
                if frame:
                    self._write(ws, [frame])

    @staticmethod
    def _lines(followed: Followed) -> bytes:
        """A ``transcript`` frame with the lines changed since the last (b"" for none)."""
        assert followed.transcript is not None
        taken = followed.transcript.take()
        if taken is None:
            return b""
        start, lines = taken
        return _frame(
            {
                "type": "transcript",
                "taskId": followed.task_id,
                "seq": followed.transcript.seq,
                "start": start,
                "lines": lines,
            }
        )

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
