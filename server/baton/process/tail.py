"""Following a growing output file line by line, resumable from a byte offset.

A :class:`Tailer` yields the COMPLETE lines an agent appends to its stdout file and keeps
:attr:`Tailer.offset`, the byte position just after the last line it yielded, so a new
broker can resume exactly there: no line lost, none seen twice. The caller says
:meth:`Tailer.finish` once it knows the process has exited; the tailer then drains the
rest (a last line without a newline included) and stops.

Wake-ups come from Linux inotify (through ctypes; one inotify descriptor per event loop,
shared by all tailers) so a line reaches the parser within a millisecond or so; where
inotify is unavailable the tailer polls every 50 ms. The tailer runs on the event loop, so
it makes few system calls (each one lets another thread take the interpreter, which the
loop then waits to get back): with inotify, one read per wake-up and none after a read that
reached the end; the file's size and identity are checked only when a wake-up (or the
once-a-second safety look) finds nothing new — which is how a truncation or a deletion
shows. :meth:`Tailer.batch` hands out every line read so far at once, for a caller that
handles them together.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import errno
import os
import struct
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from baton.errors import BatonError

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVE_SELF = 0x00000800
IN_DELETE_SELF = 0x00000400
IN_IGNORED = 0x00008000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
_WATCH_MASK = IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF
_EVENT_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of name)

#: Polling period where inotify is unavailable.
POLL_INTERVAL = 0.05
#: With inotify, still look at the file this often (cheap; guards against a lost wake-up).
_SAFETY_INTERVAL = 1.0
_CHUNK = 1 << 16
#: Bytes of inotify events read at once (an event without a name is 16 bytes).
_EVENTS_READ = 64 * 1024


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


class TailError(BatonError, RuntimeError):
    """The followed file cannot be read any more (deleted, truncated, unreadable)."""


class _Inotify:
    """One inotify descriptor for one event loop, dispatching wake-ups to watchers by path."""

    _libc: ctypes.CDLL | None = None
    _by_loop: dict[asyncio.AbstractEventLoop, _Inotify] = {}

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        self.loop = loop
        self.fd = fd
        self.watchers: dict[int, set[Callable[[], None]]] = {}
        loop.add_reader(fd, self._on_readable)

    @classmethod
    def libc(cls) -> ctypes.CDLL | None:
        if cls._libc is None and sys.platform.startswith("linux"):
            name = ctypes.util.find_library("c") or "libc.so.6"
            with contextlib.suppress(OSError):
                lib = ctypes.CDLL(name, use_errno=True)
                if hasattr(lib, "inotify_init1"):
                    lib.inotify_add_watch.argtypes = [
                        ctypes.c_int,
                        ctypes.c_char_p,
                        ctypes.c_uint32,
                    ]
                    lib.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
                    cls._libc = lib
        return cls._libc

    @classmethod
    def for_loop(cls, loop: asyncio.AbstractEventLoop) -> _Inotify | None:
        hub = cls._by_loop.get(loop)
        if hub is not None:
            return hub
        lib = cls.libc()
        if lib is None:
            return None
        fd = int(lib.inotify_init1(IN_NONBLOCK | IN_CLOEXEC))
        if fd < 0:  # e.g. EMFILE: the per-user instance limit is reached; poll instead
            return None
        hub = cls._by_loop[loop] = cls(loop, fd)
        return hub

    def add(self, path: Path, wake: Callable[[], None]) -> int | None:
        lib = self.libc()
        assert lib is not None
        wd = int(lib.inotify_add_watch(self.fd, os.fsencode(path), _WATCH_MASK))
        if wd < 0:  # ENOSPC (watch limit) or the file is gone: the caller polls
            self._close_if_idle()
            return None
        self.watchers.setdefault(wd, set()).add(wake)
        return wd

    def remove(self, wd: int, wake: Callable[[], None]) -> None:
        wakes = self.watchers.get(wd)
        if wakes is not None:
            wakes.discard(wake)
            if not wakes:
                del self.watchers[wd]
                lib = self.libc()
                if lib is not None:
                    lib.inotify_rm_watch(self.fd, wd)  # EINVAL if already gone: fine
        self._close_if_idle()

    def _close_if_idle(self) -> None:
        if self.watchers:
            return
        with contextlib.suppress(Exception):
            self.loop.remove_reader(self.fd)
        # Closing an inotify descriptor waits for the kernel to retire its watches (some
        # milliseconds on a busy machine): a worker thread does it, not the event loop.
        try:
            self.loop.run_in_executor(None, _close_quietly, self.fd)
        except RuntimeError:  # the loop is closed
            _close_quietly(self.fd)
        if self._by_loop.get(self.loop) is self:
            del self._by_loop[self.loop]

    def _on_readable(self) -> None:
        woken: set[int] = set()
        while True:
            try:
                data = os.read(self.fd, _EVENTS_READ)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                break
            pos = 0
            while pos + _EVENT_HEADER.size <= len(data):
                wd, _mask, _cookie, length = _EVENT_HEADER.unpack_from(data, pos)
                pos += _EVENT_HEADER.size + length
                woken.add(wd)
            if len(data) < _EVENTS_READ // 2:
                break  # drained: no second read to learn it (the loop calls again if not)
        if -1 in woken:  # IN_Q_OVERFLOW: wake-ups were lost, so every tailer looks again
            woken = set(self.watchers)
        for wd in woken:
            for wake in list(self.watchers.get(wd, ())):
                wake()


class Tailer:
    """Async iterator over the complete lines appended to ``path``, from byte ``offset``.

    Lines are yielded without their line ending, decoded as UTF-8 (invalid bytes replaced).
    Read :attr:`offset` after handling a line and store it with what the line produced.
    Raises :class:`TailError` if the file is deleted, moved away or truncated under it
    (after yielding what could still be read).
    """

    def __init__(
        self,
        path: Path | str,
        offset: int = 0,
        *,
        poll_interval: float = POLL_INTERVAL,
        inotify: bool = True,
    ) -> None:
        self.path = Path(path)
        self._offset = offset  # just past the last line yielded
        self._read_pos = offset  # just past the bytes read into the buffers
        self._partial = b""
        self._lines: deque[tuple[str, int]] = deque()  # (line, offset just past it)
        self._poll_interval = poll_interval
        self._want_inotify = inotify  # False: always poll (where inotify is missing, or tests)
        self._finishing = False
        self._closed = False
        self._done = asyncio.Event()
        self._woken = False  # a wake-up came since the last read
        self._timed_out = False  # the last wait ended by its timer, not by a wake-up
        self._at_end = False  # the last read reached the end of the file (as it was then)
        self._found_nothing = False  # the last read found no new byte at all
        self._waiter: asyncio.Future[None] | None = None
        self._fd: int | None = None
        self._hub: _Inotify | None = None
        self._wd: int | None = None
        self.error: TailError | None = None

    @property
    def offset(self) -> int:
        """Bytes consumed through the last line yielded: where a new tailer should resume."""
        return self._offset

    @property
    def uses_inotify(self) -> bool:
        return self._wd is not None

    @property
    def closed(self) -> bool:
        return self._closed

    def finish(self) -> None:
        """The writer has exited: drain what is left, yield a last unterminated line, stop."""
        self._finishing = True
        self._wakeup()

    def close(self) -> None:
        """Stop now, without draining; release the file and the inotify watch."""
        if self._hub is not None and self._wd is not None:
            self._hub.remove(self._wd, self._wakeup)
        self._hub = self._wd = None
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        self._closed = True
        self._done.set()
        self._wakeup()

    async def wait_closed(self) -> None:
        """Return once iteration has stopped (finished, closed or failed)."""
        await self._done.wait()

    def __aiter__(self) -> AsyncIterator[str]:
        return self

    async def __anext__(self) -> str:
        while True:
            if self._lines:
                line, end = self._lines.popleft()
                self._offset = end
                return line
            if self._closed:
                raise StopAsyncIteration
            self._open()
            if self._must_read():
                self._woken = self._timed_out = False  # a write after the read wakes us again
                if self._read_available():
                    continue
            if self._finishing:
                return self._end()
            if self._found_nothing:  # a wake-up (or the timer) without new bytes: look why
                self._check_still_there()
            timeout = _SAFETY_INTERVAL if self._wd is not None else self._poll_interval
            self._timed_out = await self._sleep(timeout)

    async def batch(self, limit: int = 256) -> list[str]:
        """The next complete lines: at least one (waiting for it), at most ``limit``, as many
        as are read already; ``[]`` once iteration stops. :attr:`offset` is then just past
        the last of them."""
        try:
            lines = [await self.__anext__()]
        except StopAsyncIteration:
            return []
        while self._lines and len(lines) < limit:
            line, self._offset = self._lines.popleft()
            lines.append(line)
        return lines

    @property
    def buffered(self) -> int:
        """Complete lines read from the file and not handed out yet."""
        return len(self._lines)

    def _must_read(self) -> bool:
        """Whether the file may hold bytes not read yet. With inotify, a read that reached
        the end is not repeated until a wake-up says the file changed (or the safety timer
        fires): one read per wake-up, no read of nothing after each."""
        return (
            self._wd is None
            or self._woken
            or self._timed_out
            or self._finishing
            or not self._at_end
        )

    def _wakeup(self) -> None:
        self._woken = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _sleep(self, seconds: float) -> bool:
        """Wait for a wake-up or ``seconds`` (a bare future: no task per wait, as wait_for
        has); True if the time ran out without a wake-up."""
        if self._woken:
            return False
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        handle = loop.call_later(seconds, _resolve, waiter)
        try:
            await waiter
        finally:
            handle.cancel()
            self._waiter = None
        return not self._woken

    def _open(self) -> None:
        if self._fd is not None:
            return
        try:
            self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            self._fail(f"cannot read {self.path}: {exc.strerror or exc}")
        hub = _Inotify.for_loop(asyncio.get_running_loop()) if self._want_inotify else None
        if hub is not None:
            self._wd = hub.add(self.path, self._wakeup)
            self._hub = hub if self._wd is not None else None

    def _read_available(self) -> bool:
        """Read what was appended; True if it completed at least one line.

        Reads to a short read: the end of the file as it is now (to an empty read when
        finishing). A read that finds no new byte checks the size too: a file shorter than
        what was read of it was truncated.
        """
        assert self._fd is not None
        got_line = read_any = False
        while True:
            data = os.pread(self._fd, _CHUNK, self._read_pos)
            if data:
                read_any = True
                self._read_pos += len(data)
                chunk = self._partial + data
                start_offset = self._read_pos - len(chunk)
                pieces = chunk.split(b"\n")
                self._partial = pieces.pop()
                pos = start_offset
                for piece in pieces:
                    pos += len(piece) + 1
                    self._lines.append((_decode(piece), pos))
                    got_line = True
            if not data or (len(data) < _CHUNK and not self._finishing):
                break
        self._at_end = True  # as of now: the next write wakes us (or the next poll looks)
        self._found_nothing = not read_any
        if not read_any:
            size = os.fstat(self._fd).st_size
            if size < self._read_pos:
                self._fail(
                    f"{self.path} was truncated under the tailer (size {size} < {self._read_pos})"
                )
        return got_line

    def _end(self) -> str:
        """The finish drain is complete: hand out a last unterminated line, or stop."""
        partial, self._partial = self._partial, b""
        self.close()  # nothing more is read; the next call stops
        if partial:
            self._offset = self._read_pos
            return _decode(partial)
        raise StopAsyncIteration

    def _check_still_there(self) -> None:
        assert self._fd is not None
        try:
            st = os.fstat(self._fd)
            path_st = os.stat(self.path)
        except FileNotFoundError:
            self._fail(f"{self.path} was deleted while its output was being read")
        except OSError as exc:
            self._fail(f"cannot read {self.path}: {exc.strerror or exc}")
        if st.st_nlink == 0 or (st.st_ino, st.st_dev) != (path_st.st_ino, path_st.st_dev):
            self._fail(f"{self.path} was deleted or replaced while its output was being read")

    def _fail(self, message: str) -> None:
        self.error = TailError(message)
        self.close()
        raise self.error


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _decode(raw: bytes) -> str:
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return raw.decode("utf-8", errors="replace")


def lines_before(path: Path, offset: int) -> list[str]:
    """The lines a :class:`Tailer` yielded before reaching ``offset`` (to rebuild a parser's
    state after a restart: feed them, drop their events, then tail on from ``offset``)."""
    if offset <= 0:
        return []
    try:
        with open(path, "rb") as f:
            data = f.read(offset)
    except OSError:
        return []
    pieces = data.split(b"\n")
    if pieces and pieces[-1] == b"":
        pieces.pop()
    return [_decode(p) for p in pieces]
