"""The durable record: tasks, attempts, events, diffs, hunk decisions and memory in SQLite.

The names below are loaded on first use: the paths (:mod:`baton.store.paths`, standard
library only) serve clients that never open the database — the CLI's websocket path finds
its broker through them — so importing them does not import sqlite-utils.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baton.store.paths import (
        db_path,
        runtime_dir,
        state_home,
        task_dir,
        tasks_dir,
        worktrees_dir,
    )
    from baton.store.store import (
        KEEP,
        AmbiguousTask,
        AsyncStore,
        Broker,
        Store,
        StoreError,
        UnknownTask,
        fts_query,
        is_busy,
    )

_PATHS = ("db_path", "runtime_dir", "state_home", "task_dir", "tasks_dir", "worktrees_dir")
_STORE = ("KEEP", "AmbiguousTask", "AsyncStore", "Broker", "Store", "StoreError", "UnknownTask")
_HOME = {name: "paths" for name in _PATHS} | {
    name: "store" for name in (*_STORE, "fts_query", "is_busy")
}


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
