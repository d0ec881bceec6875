"""Refilling the warm pool (:mod:`baton.workspace.pool`) while nothing waits for it.

One thread per broker makes the pool's checkouts, at the lowest priority there is: the
thread itself at ``nice`` 19 and its git in the idle I/O class (:func:`baton.workspace.git.idle`).
It starts on a repository only once no work a task waits for is under way — its snapshot
and checkout, its final diff (:func:`foreground`) — and :data:`REFILL_DELAY` seconds have
passed since the last (by then a prepared task's agent has started), so a refill never
stands between a task and its agent or its review. (A checkout being made when such work
starts is finished; on a disk whose scheduler has no idle class the two then share it.)
Asked again for a repository before it got to it, it fills at the newest commit asked for.
The same thread, on the same terms, makes the warm copies of the repositories' indexes that
snapshots start from (:mod:`baton.workspace.warmseed`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from baton.workspace.git import idle
from baton.workspace.pool import PoolLimits, fill
from baton.workspace.snapshot import repo_key
from baton.workspace.warmseed import warm

log = logging.getLogger(__name__)

#: Seconds after the last work a task waited for before the pool is refilled.
REFILL_DELAY = 1.0

# One lock for every refiller of the process and the work they make way for.
_cond = threading.Condition()
_waited_on = 0  # snapshots, checkouts and final diffs under way, which a task waits for
_quiet_since = time.monotonic()


@contextlib.contextmanager
def foreground() -> Iterator[None]:
    """While inside, work a task waits for is under way (its preparation, its diff): no
    refill starts, in any broker of this process, until :data:`REFILL_DELAY` after it."""
    global _waited_on, _quiet_since
    with _cond:
        _waited_on += 1
    try:
        yield
    finally:
        with _cond:
            _waited_on -= 1
            _quiet_since = time.monotonic()
            _cond.notify_all()


class Refiller:
    """The pool's background filler for the checkouts under ``worktrees_dir``."""

    def __init__(self, worktrees_dir: Path, *, delay: float = REFILL_DELAY) -> None:
        self.worktrees_dir = worktrees_dir
        self.delay = delay
        self._cond = _cond
        self._pending: dict[str, Callable[[], object]] = {}
        self._filling = False
        self._closed = False
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def preparing(self) -> Iterator[None]:
        """While inside, a task is being prepared: no refill starts (:func:`foreground`)."""
        with foreground():
            yield

    def ask(self, git_dir: Path, commit: str, limits: PoolLimits) -> None:
        """Refill the pool of the repository at ``git_dir`` with checkouts of ``commit``."""

        def job() -> None:
            made = fill(git_dir, commit, self.worktrees_dir, limits, stop=lambda: self._closed)
            if made:
                log.debug("pool of %s: %d checkout(s) of %s made", git_dir, made, commit[:12])

        self._add("pool " + repo_key(git_dir), job)

    def warm(self, git_dir: Path, top: Path, seeds: Path) -> None:
        """Make the warm copy of the index of the repository at ``git_dir`` (work tree
        ``top``) in ``seeds`` (:func:`baton.workspace.warmseed.warm`)."""
        self._add("seed " + repo_key(git_dir), lambda: warm(git_dir, top, seeds))

    def _add(self, key: str, job: Callable[[], object]) -> None:
        """Do ``job`` when nothing waits (the newest asked for under one key replaces the
        one before it)."""
        with self._cond:
            if self._closed:
                return
            self._pending[key] = job
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="baton-pool-refill", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is asked for or being filled; whether that came in time."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._filling:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self, timeout: float = 10.0) -> None:
        """Stop: nothing more is filled (a checkout being made is finished first)."""
        with self._cond:
            self._closed = True
            self._pending.clear()
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _next(self) -> Callable[[], object] | None:
        with self._cond:
            while True:
                if self._closed:
                    return None
                wait = _quiet_since + self.delay - time.monotonic()
                if self._pending and not _waited_on and wait <= 0:
                    key = next(iter(self._pending))
                    self._filling = True
                    return self._pending.pop(key)
                self._cond.wait(wait if self._pending and wait > 0 else None)

    def _run(self) -> None:
        with contextlib.suppress(OSError, AttributeError):  # Linux: this thread alone
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        while (job := self._next()) is not None:
            try:
                with idle():
                    job()
            except Exception as exc:
                log.warning("background work for the pool failed: %s", exc)
            finally:
                with self._cond:
                    self._filling = False
                    self._cond.notify_all()
