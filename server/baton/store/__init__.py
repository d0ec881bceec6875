"""The durable record: tasks, attempts, events, diffs, hunk decisions and memory in SQLite."""

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
