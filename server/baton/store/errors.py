"""What the store raises: the database refused (:class:`StoreError`), or an id names no task
or several (:class:`UnknownTask`, :class:`AmbiguousTask`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from baton.errors import BatonError, NotFound


class StoreError(BatonError):
    """The database refused an operation (disk full, corrupt file, locked, …)."""


class UnknownTask(NotFound, KeyError):
    """No stored task has this id (or id prefix)."""

    def __init__(self, task_id: str, detail: str = "") -> None:
        super().__init__(task_id)
        self.task_id = task_id
        self.detail = detail

    def __str__(self) -> str:
        return f"no task {self.task_id!r}" + (f" ({self.detail})" if self.detail else "")


class AmbiguousTask(NotFound, KeyError):
    """An id prefix matches more than one task."""

    def __init__(self, prefix: str, candidates: Sequence[str]) -> None:
        super().__init__(prefix)
        self.prefix = prefix
        self.candidates = list(candidates)

    def __str__(self) -> str:
        shown = ", ".join(self.candidates[:5]) + (", …" if len(self.candidates) > 5 else "")
        return f"task id prefix {self.prefix!r} matches several tasks: {shown}"


def store_error(path: Path, action: str, exc: sqlite3.Error) -> StoreError:
    message = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and "full" in message:
        hint = "the disk (or the database's size limit) is full; free some space and retry"
    elif "locked" in message or "busy" in message:
        hint = "another process holds the database; retry in a moment"
    elif "malformed" in message or "not a database" in message:
        hint = "the file is damaged or is not a Baton database; move it aside to start afresh"
    else:
        hint = "the database refused the operation"
    return StoreError(f"could not {action} in {path}: {hint} (sqlite: {message})")


def is_busy(exc: BaseException) -> bool:
    """The store error says another connection held the write lock (nothing was written)."""
    cause = exc.__cause__ if isinstance(exc, StoreError) else exc
    return isinstance(cause, sqlite3.OperationalError) and (
        "locked" in str(cause) or "busy" in str(cause)
    )
