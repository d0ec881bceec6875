"""Keeping the store small (``[retention] keep_days``): the events of tasks settled long ago
are pruned, all but each task's last one.

What stays: the task row (its instruction, state, completion, usage), its diff and hunk
decisions, its attempts, the ledger and the project memory, so ``baton tasks``, ``inspect``
and ``stats`` still tell what happened; only the event-by-event record (``watch`` from the
start, the transcript) goes. The last event is kept so the task's sequence numbers go on
from where they were if it is ever reopened, and a watcher resuming from a number it read
never sees one again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from baton.core.lifecycle import SETTLED, TaskState
from baton.store.errors import StoreError
from baton.store.store import Store

DAY = 86_400.0


def prune_events(
    store: Store, settled_before: float, states: Iterable[TaskState] = SETTLED
) -> tuple[int, int]:
    """Prune the events of tasks in ``states`` settled before ``settled_before`` (a Unix
    time), keeping each one's last; (tasks pruned, events removed). One transaction."""
    chosen = sorted(str(s) for s in states)
    marks = ", ".join("?" for _ in chosen)
    old = f"SELECT id FROM tasks WHERE state IN ({marks}) AND settled_at < ?"
    params = (*chosen, settled_before)
    conn = store.db.conn
    try:
        with store.db.atomic():
            tasks = conn.execute(
                f"SELECT COUNT(DISTINCT e.task_id) FROM events e WHERE e.task_id IN ({old}) "
                "AND e.seq < (SELECT MAX(seq) FROM events m WHERE m.task_id = e.task_id)",
                params,
            ).fetchone()[0]
            removed = conn.execute(
                f"DELETE FROM events WHERE task_id IN ({old}) AND seq < "
                "(SELECT MAX(seq) FROM events m WHERE m.task_id = events.task_id)",
                params,
            ).rowcount
    except sqlite3.Error as exc:
        raise StoreError(f"could not prune old events in {store.path}: {exc}") from exc
    return int(tasks), int(removed)
