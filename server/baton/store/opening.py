"""Opening the database: one connection in WAL mode, migrated, safe when brokers race.

Two brokers often open a new database at the same instant (a fan-out starting two of them,
the language server and the CLI). Switching the journal to WAL takes an exclusive lock that
SQLite does not wait for, so the switch is retried for as long as a write would wait; the
migrations run under one write lock (:func:`baton.store.migrations.apply`).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

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
