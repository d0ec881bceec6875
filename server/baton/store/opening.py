"""Opening the database: one connection in WAL mode, migrated, safe when brokers race; and
the transactions every :class:`~baton.store.Store` method runs in (:class:`Connection`).

Two brokers often open a new database at the same instant (a fan-out starting two of them,
the language server and the CLI). Switching the journal to WAL takes an exclusive lock that
SQLite does not wait for, so the switch is retried for as long as a write would wait; the
migrations run under one write lock (:func:`baton.store.migrations.apply`).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

from sqlite_utils import Database

import baton.store.migrations as migrations
from baton.store.errors import store_error


def connect(path: Path, *, busy_timeout_ms: int, checkpoints: bool) -> sqlite3.Connection:
    """A connection to ``path``, created and migrated; a :class:`StoreError` if it cannot be."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(str(path), check_same_thread=False)
    except sqlite3.Error as exc:
        raise store_error(path, "open the database", exc) from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        if not checkpoints:
            conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("PRAGMA foreign_keys = ON")
        _enable_wal(conn, within_s=max(busy_timeout_ms, 1000) / 1000)
        conn.execute("PRAGMA synchronous = NORMAL")
        migrations.apply(Database(conn))
    except sqlite3.Error as exc:
        conn.close()
        raise store_error(path, "open the database", exc) from exc
    return conn


def _enable_wal(conn: sqlite3.Connection, *, within_s: float) -> None:
    """Put the database in WAL mode, retrying while another connection holds the lock."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if mode == "wal":
                return
            conn.execute("PRAGMA journal_mode = wal")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


class Connection:
    """One connection to the database at ``path``, created and migrated on open."""

    def __init__(
        self, path: Path | str, *, busy_timeout_ms: int = 5000, checkpoints: bool = True
    ) -> None:
        """Open (and migrate) the database.

        ``busy_timeout_ms`` is how long a write waits for another connection's; 0 fails at
        once (:func:`is_busy` tells). Without ``checkpoints`` this connection never copies the
        WAL back into the database itself (others do): its commits stay short.
        """
        self.path = Path(path)
        self._conn = connect(self.path, busy_timeout_ms=busy_timeout_ms, checkpoints=checkpoints)
        self.db = Database(self._conn)
        # The last event seq this connection wrote, per task.
        self._last_seq: dict[str, int] = {}

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        """Turn sqlite errors into :class:`StoreError` naming what was being done."""
        try:
            yield
        except sqlite3.Error as exc:
            raise store_error(self.path, action, exc) from exc

    @contextmanager
    def _write(self, action: str) -> Iterator[sqlite3.Connection]:
        """One transaction, rolled back on any error, that takes the write lock at its start
        (waiting for it up to the busy timeout), so what it reads first no other connection
        changes before it ends. (Inside a transaction already open: a savepoint of it.)

        A deferred transaction reads first whenever a statement does (a trigger, a foreign
        key, the full-text index), and SQLite then refuses at once to wait for the write
        lock another connection holds: "database is locked" whatever the busy timeout — as
        the writer thread's commits were refused while the loop's connection committed.
        """
        with self._guard(action):
            if self._conn.in_transaction:
                with self.db.atomic():
                    yield self._conn
                return
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
                self._conn.commit()
            except BaseException:
                self._conn.rollback()
                raise

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._guard("read"):
            return self._conn.execute(sql, params).fetchall()

    def close(self) -> None:
        """Close the connection, refreshing the planner's statistics first if they are stale."""
        try:
            self._conn.execute("PRAGMA analysis_limit = 400")
            self._conn.execute("PRAGMA optimize")
        except sqlite3.Error:
            pass  # only an optimisation; a full disk must not stop us closing
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
