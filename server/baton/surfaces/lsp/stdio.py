"""Reading the client's messages from stdin on the event loop, a whole message per wake-up.

pygls reads stdin on a worker thread, one ``readline`` (then one ``read`` for the body) per
hop: three thread hand-offs per message, each coming back to the loop as a callback that
waits behind whatever else is ready, and each a chance for another thread to hold the
interpreter. With the broker inside the server that wait is most of a round trip. Here the
loop itself watches stdin (``add_reader``): when bytes arrive, one callback reads what is
there, frames every complete message (``Content-Length`` headers, then the body) and hands
each to the protocol at once — a handler that answers without waiting answers in that same
callback.

The loop the server runs on (:class:`RequestsFirstLoop`) also runs that callback ahead of
every other ready one: a request waits for the callback running when it came, not for the
broker's queue behind it.

stdin is left blocking (no ``O_NONBLOCK`` on a descriptor the client may share with other
processes): a read only follows the loop's word that bytes are there, and a pipe's read
returns what it holds. Where the loop cannot watch stdin (a regular file, a platform
without ``add_reader`` on pipes) the caller falls back to pygls' reader.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import selectors
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

_CONTENT_LENGTH = re.compile(rb"^content-length:\s*(\d+)\s*$", re.IGNORECASE | re.MULTILINE)
_READ = 1 << 16


class MessageReader:
    """Frames LSP messages out of the bytes fed to it and hands each to ``handle``.

    ``structure``: pygls' ``object_hook`` turning JSON objects into its message types;
    ``failed``: told of a message that could not be handled (pygls' error reporter).
    """

    def __init__(
        self,
        handle: Callable[[Any], None],
        structure: Callable[[dict[str, Any]], Any],
        failed: Callable[[Exception, Any], Any] | None = None,
        error_type: Any = Exception,
    ) -> None:
        self._handle = handle
        self._structure = structure
        self._failed = failed
        self._error_type = error_type
        self._buffer = bytearray()
        self._length: int | None = None  # the body length once its headers are read

    def feed(self, data: bytes) -> None:
        """Take bytes read from the client; handle every message they complete."""
        self._buffer += data
        while True:
            if self._length is None:
                end = self._buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                headers = bytes(self._buffer[:end])
                del self._buffer[: end + 4]
                found = _CONTENT_LENGTH.search(headers)
                if found is None:
                    log.warning("a message without Content-Length was skipped: %r", headers)
                    continue
                self._length = int(found.group(1))
            if len(self._buffer) < self._length:
                return
            body = bytes(self._buffer[: self._length])
            del self._buffer[: self._length]
            self._length = None
            self._dispatch(body)

    def _dispatch(self, body: bytes) -> None:
        try:
            message = json.loads(body, object_hook=self._structure)
            self._handle(message)
        except (SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:
            log.exception("unable to handle a message")
            if self._failed is not None:
                self._failed(exc, self._error_type)


class RequestsFirstLoop(asyncio.SelectorEventLoop):
    """An event loop whose reader of :attr:`first_fd` runs before the other ready callbacks
    of the turn it is ready in (asyncio runs them in the order they became ready: a request
    would wait for every callback the broker had queued)."""

    first_fd: int | None = None

    def _process_events(self, event_list: list[tuple[selectors.SelectorKey, int]]) -> None:
        fd = self.first_fd
        for i, (key, mask) in enumerate(event_list):
            if key.fd != fd or not mask & selectors.EVENT_READ:
                continue
            reader = key.data[0] if key.data else None
            if reader is None or reader.cancelled():
                break
            super()._process_events(event_list[:i] + event_list[i + 1 :])  # type: ignore[misc]
            self._ready.appendleft(reader)  # type: ignore[attr-defined]
            return
        super()._process_events(event_list)  # type: ignore[misc]

    def start_first(self, task: asyncio.Task[Any]) -> None:
        """Run ``task``'s first step next, before the callbacks already ready (as an eager
        task would start at once): a request's handler does not wait a turn of the loop."""
        ready = self._ready  # type: ignore[attr-defined]
        if ready and getattr(ready[-1]._callback, "__self__", None) is task:
            ready.appendleft(ready.pop())


def start_first(task: asyncio.Task[Any]) -> None:
    """:meth:`RequestsFirstLoop.start_first` on the running loop, when it is one; call it
    right after creating ``task``."""
    loop = asyncio.get_running_loop()
    if isinstance(loop, RequestsFirstLoop):
        loop.start_first(task)


async def serve_stdin(
    fd: int, reader: MessageReader, stopped: Callable[[], bool] = lambda: False
) -> None:
    """Feed ``reader`` what arrives on ``fd`` until the client closes it (end of file) or
    ``stopped()`` (the server was shut down; looked at after each read).

    Raises :class:`OSError` (``PermissionError`` for a regular file) when the loop cannot
    watch ``fd``: the caller reads another way.
    """
    loop = asyncio.get_running_loop()
    closed: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        try:
            data = os.read(fd, _READ)
        except BlockingIOError:
            return
        except OSError as exc:
            log.error("cannot read the client's messages: %s", exc)
            data = b""
        if data:
            reader.feed(data)
        if (not data or stopped()) and not closed.done():
            loop.remove_reader(fd)
            closed.set_result(None)

    loop.add_reader(fd, readable)
    if isinstance(loop, RequestsFirstLoop):
        loop.first_fd = fd
    try:
        await closed
    finally:
        loop.remove_reader(fd)
