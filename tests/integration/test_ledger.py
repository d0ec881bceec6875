"""The outcome ledger never loses a row to "database is locked" (issue 18).

The broker's event bus commits on a connection of its own while outcomes are written on the
store's; a ledger write that read before it wrote could fail at once when the other
connection committed in between, whatever the busy timeout.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from baton.core.lifecycle import Completion, TaskState
from baton.core.task import Task
from baton.runtime import accounts
from baton.store import Store


def test_a_burst_of_outcomes_while_another_connection_commits_loses_no_row(
    tmp_path: Path,
) -> None:
    path = tmp_path / "baton.db"
    store = Store(path)
    tasks = [
        Task(id=f"t{i:04d}", instruction="x", root="/r", state=TaskState.REVIEW,
             completion=Completion.COMPLETED, settled_at=time.time())
        for i in range(300)
    ]  # fmt: skip
    store.insert_tasks(tasks)
    stop = threading.Event()

    def other_writer() -> None:
        # Another connection (as the bus's own) committing small transactions all the time,
        # and holding the write lock for a while now and then.
        conn = sqlite3.connect(str(path), isolation_level=None)
        conn.execute("PRAGMA busy_timeout = 5000")
        n = 0
        while not stop.is_set():
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("UPDATE tasks SET updated_at = ? WHERE id = 't0000'", (time.time(),))
            if n % 50 == 0:
                time.sleep(0.05)
            conn.execute("COMMIT")
            n += 1
            time.sleep(0.001)  # as the bus: it yields to the loop between two commits
        conn.close()

    writer = threading.Thread(target=other_writer)
    writer.start()
    failures = []
    try:
        for task in tasks:
            try:
                accounts.record_outcome(store, task)
            except Exception as exc:  # the bug: "database is locked" at once
                failures.append(str(exc))
    finally:
        stop.set()
        writer.join()
    rows = store.db.execute("SELECT COUNT(*) FROM ledger").fetchone()[0]
    store.close()
    assert not failures, failures[:3]
    assert rows == len(tasks)
