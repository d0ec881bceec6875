"""The event bus: persist first, then fan out.

Events are committed to the store in batches (group commit: whatever arrives while a batch
is being written goes into the next one), and only after the commit does any subscriber see
them. A batch is committed right on the event loop through a connection of its own (a few
hundred microseconds, no hand-off to a thread and back, no WAL checkpoint); while another
connection holds the write lock it is tried again there a moment later, and it goes to the
store's writer thread, which waits its turn, when it is large or the lock stays held past
:data:`INLINE_WAIT`. A subscriber that cannot keep up is cut off with a marker
rather than slowing everyone else; it can catch up from the store by sequence number.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from baton.core.events import Event
from baton.store import AsyncStore, Store, is_busy

log = logging.getLogger(__name__)

R = TypeVar("R")
Listener = Callable[[Event], None]
#: Batches larger than this are committed on the writer thread, not on the event loop.
INLINE_MAX = 256
#: Seconds a write on the loop is tried again while another connection holds the lock.
INLINE_WAIT = 0.1
#: Called once per commit with every event it stamped, in commit order (fan-out in one go).
BatchListener = Callable[[list[Event]], None]


@dataclass(slots=True)
class _Pending:
    events: list[Event]
    offset: tuple[str, int, int] | None  # (task id, attempt, byte offset in its output file)
    done: asyncio.Future[list[Event]]


class Subscription:
    """Committed events for some tasks (or all), in order, through an asyncio queue."""

    def __init__(self, bus: EventBus, task_ids: set[str] | None, maxsize: int) -> None:
        self._bus = bus
        self.task_ids = task_ids
        self.queue: asyncio.Queue[Event | None] = asyncio.Queue(maxsize)
        self.overflowed = False

    def wants(self, event: Event) -> bool:
        return self.task_ids is None or event.task_id in self.task_ids

    def offer(self, event: Event) -> None:
        if self.overflowed:
            return
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.overflowed = True
            self._bus.unsubscribe(self)
            # Make room for the end marker so the reader learns it fell behind.
            while not self.queue.empty():
                self.queue.get_nowait()
            self.queue.put_nowait(None)

    async def get(self) -> Event | None:
        """The next event, or None once the subscription was closed or overflowed."""
        return await self.queue.get()

    def close(self) -> None:
        self._bus.unsubscribe(self)
        try:
            self.queue.put_nowait(None)
        except asyncio.QueueFull:
            pass

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        event = await self.get()
        if event is None:
            raise StopAsyncIteration
        return event


@dataclass
class EventBus:
    store: AsyncStore
    #: A connection for committing on the loop (busy timeout 0, no checkpoints), or None.
    inline: Store | None = None
    _pending: list[_Pending] = field(default_factory=list)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    _subs: list[Subscription] = field(default_factory=list)
    _listeners: list[Listener] = field(default_factory=list)
    _batch_listeners: list[BatchListener] = field(default_factory=list)
    _writer: asyncio.Task[None] | None = None
    _closing: bool = False
    committed: int = 0

    def start(self) -> None:
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_task(self._write_loop())

    def emit_nowait(
        self, events: Sequence[Event], offset: tuple[str, int, int] | None = None
    ) -> asyncio.Future[list[Event]]:
        """Queue events for commit; the future resolves with them stamped (seq, ts)."""
        fut: asyncio.Future[list[Event]] = asyncio.get_running_loop().create_future()
        if self._closing:
            fut.set_exception(RuntimeError("event bus is closed"))
            return fut
        self._pending.append(_Pending(list(events), offset, fut))
        self._wake.set()
        return fut

    async def emit(
        self, events: Sequence[Event], offset: tuple[str, int, int] | None = None
    ) -> list[Event]:
        """Commit events and wait until subscribers have been given them."""
        return await self.emit_nowait(events, offset)

    def subscribe(self, task_ids: set[str] | None = None, maxsize: int = 10_000) -> Subscription:
        sub = Subscription(self, task_ids, maxsize)
        self._subs.append(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def add_batch_listener(self, listener: BatchListener) -> None:
        """Call ``listener`` synchronously with each committed batch (after subscribers)."""
        self._batch_listeners.append(listener)

    def remove_batch_listener(self, listener: BatchListener) -> None:
        if listener in self._batch_listeners:
            self._batch_listeners.remove(listener)

    async def _write_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if not self._pending:
                if self._closing:
                    return
                continue
            batch, self._pending = self._pending, []
            events = [e for p in batch for e in p.events]
            offsets = [p.offset for p in batch if p.offset is not None]
            try:
                stamped = await self._persist(events, offsets)
            except Exception as exc:  # the store failed: nobody sees uncommitted events
                log.error("could not record %d events: %s", len(events), exc)
                for p in batch:
                    if not p.done.done():
                        p.done.set_exception(exc)
                continue
            self.committed += len(stamped)
            i = 0
            for p in batch:
                mine = stamped[i : i + len(p.events)]
                i += len(p.events)
                self._fan_out(mine)
                if not p.done.done():
                    p.done.set_result(mine)
            for batch_listener in list(self._batch_listeners):
                try:
                    batch_listener(stamped)
                except Exception:
                    log.exception("event batch listener failed")
            if self._pending:
                self._wake.set()
                # A commit on the loop does not yield: let everyone else run between two.
                await asyncio.sleep(0)

    async def _persist(
        self, events: list[Event], offsets: list[tuple[str, int, int]]
    ) -> list[Event]:
        commit = functools.partial(_commit, events=events, offsets=offsets)
        if len(events) <= INLINE_MAX:
            return await self.write(commit, fall_back=True)
        return await self.store.call(commit)

    async def write(self, func: Callable[[Store], R], *, fall_back: bool = False) -> R:
        """Commit a short write, ``func(store)``, on the loop through its own connection.

        While another connection holds the write lock (nothing was written), it is tried
        again a moment later, the loop running meanwhile, for up to :data:`INLINE_WAIT`
        seconds — the holder is mostly this broker's writer thread, whose queue of work
        can be tens of milliseconds long — and only then handed to the writer thread,
        which waits its turn (up to its busy timeout). Without a loop connection the writer
        thread runs it; a failure other than busy is raised (with ``fall_back``, logged and
        the writer thread tries).
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + INLINE_WAIT
        pause = 0.0005
        while self.inline is not None:
            try:
                return func(self.inline)
            except Exception as exc:
                if not is_busy(exc):
                    if not fall_back:
                        raise
                    log.warning("committing on the loop failed (%s); trying the writer", exc)
                    break
            if loop.time() + pause > deadline:
                break
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.008)
        return await self.store.call(func)

    def _fan_out(self, events: list[Event]) -> None:
        for event in events:
            for sub in list(self._subs):
                if sub.wants(event):
                    sub.offer(event)
            for listener in list(self._listeners):
                try:
                    listener(event)
                except Exception:
                    log.exception("event listener failed")

    async def close(self) -> None:
        """Commit what is pending, then stop the writer and end every subscription."""
        self._closing = True
        self._wake.set()
        if self._writer is not None:
            await self._writer
            self._writer = None
        for sub in list(self._subs):
            sub.close()
        if self.inline is not None:
            inline, self.inline = self.inline, None
            inline.close()


def _commit(
    store: Store, *, events: list[Event], offsets: list[tuple[str, int, int]]
) -> list[Event]:
    return store.append_events(events, offsets=offsets)
