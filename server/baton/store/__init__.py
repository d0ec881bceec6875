"""The durable record: tasks, attempts, events, diffs, hunk decisions and memory in SQLite.

The names below are loaded on first use: the paths (:mod:`baton.store.paths`, standard
library only) serve clients that never open the database — the CLI's websocket path finds
its broker through them — so importing them does not import sqlite-utils; nor do the errors
(:mod:`~baton.store.errors`) and the row layout (:mod:`~baton.store.layout`).
:class:`Store` (:mod:`~baton.store.store`) is the synchronous database, and
:class:`AsyncStore` (:mod:`~baton.store.asyncstore`) runs it on one thread for asyncio.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baton.store.asyncstore import AsyncStore
    from baton.store.errors import AmbiguousTask, StoreError, UnknownTask, is_busy
    from baton.store.layout import KEEP, Broker, fts_query
    from baton.store.paths import (
        db_path,
        runtime_dir,
        state_home,
        task_dir,
        tasks_dir,
        worktrees_dir,
    )
    from baton.store.store import Store

_PATHS = ("db_path", "runtime_dir", "state_home", "task_dir", "tasks_dir", "worktrees_dir")
_HOME = (
    {name: "paths" for name in _PATHS}
    | {name: "errors" for name in ("AmbiguousTask", "StoreError", "UnknownTask", "is_busy")}
    | {name: "layout" for name in ("KEEP", "Broker", "fts_query")}
    | {"Store": "store", "AsyncStore": "asyncstore"}
)


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'baton.store' has no attribute {name!r}")
    return getattr(importlib.import_module(f"baton.store.{module}"), name)


__all__ = [
    "KEEP",
    "AmbiguousTask",
    "AsyncStore",
    "Broker",
    "Store",
    "StoreError",
    "UnknownTask",
    "db_path",
    "fts_query",
    "is_busy",
    "runtime_dir",
    "state_home",
    "task_dir",
    "tasks_dir",
    "worktrees_dir",
]
