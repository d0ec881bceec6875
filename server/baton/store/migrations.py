"""The database schema, as sqlite-utils migrations applied in order when a Store opens.

Each migration is frozen once released: change the schema by adding a new one, never by
editing an old one. sqlite-utils records what ran in its ``_sqlite_migrations`` table.
"""

from __future__ import annotations

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

MIGRATIONS = Migrations("baton")

#: The task columns full-text search covers.
FTS_COLUMNS = ("title", "instruction", "brief", "summary")


@MIGRATIONS(name="0001_initial")
def initial(db: Database) -> None:
    """Tasks, attempts, events, diffs, hunk decisions, project memory and brokers."""
    db.execute(
        """
        CREATE TABLE tasks (
            id TEXT PRIMARY KEY,
            state TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            settled_at REAL,
            root TEXT NOT NULL,
            worker TEXT NOT NULL DEFAULT '',
            "group" TEXT,
            owner TEXT,
            completion TEXT,
            action TEXT NOT NULL DEFAULT 'delegate',
            kind TEXT NOT NULL DEFAULT 'general',
            isolation TEXT NOT NULL DEFAULT 'worktree',
            provider TEXT NOT NULL DEFAULT '',
            model TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            resets_at REAL,
            session_id TEXT,
            snapshot TEXT,
            base_ref TEXT,
            worktree TEXT,
            branch TEXT,
            title TEXT NOT NULL DEFAULT '',
            route_reason TEXT NOT NULL DEFAULT '',
            message TEXT NOT NULL DEFAULT '',
            targets TEXT NOT NULL DEFAULT '[]',
            scope TEXT NOT NULL DEFAULT '[]',
            options TEXT NOT NULL DEFAULT '{}',
            instruction TEXT NOT NULL,
            summary TEXT NOT NULL DEFAULT '',
            brief TEXT NOT NULL DEFAULT ''
        )
        """
    )
    # Small columns first, long texts last: filters and sort keys never read overflow pages.
    # Every listing is newest first, so each filter index ends in (created_at, id): SQLite
    # then reads rows in order and stops at the LIMIT instead of sorting every match.
    tasks = db.table("tasks")
    tasks.create_index(["created_at", "id"], index_name="idx_tasks_created")
    for column in ("state", "worker", "group", "root"):
        tasks.create_index([column, "created_at", "id"], index_name=f"idx_tasks_{column}")
    tasks.create_index(["owner"], index_name="idx_tasks_owner")
    db.execute(
        """
        CREATE TABLE attempts (
            task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
            n INTEGER NOT NULL,
            reason TEXT NOT NULL DEFAULT 'first',
            worker TEXT NOT NULL DEFAULT '',
            provider TEXT NOT NULL DEFAULT '',
            model TEXT,
            transport TEXT NOT NULL DEFAULT 'native',
            session_id TEXT,
            pid INTEGER,
            out_path TEXT NOT NULL DEFAULT '',
            err_path TEXT NOT NULL DEFAULT '',
            exit_path TEXT NOT NULL DEFAULT '',
            out_offset INTEGER NOT NULL DEFAULT 0,
            started_at REAL NOT NULL DEFAULT 0,
            ended_at REAL,
            exit_code INTEGER,
            completion TEXT,
            owner TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (task_id, n)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE events (
            task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            ts REAL NOT NULL,
            attempt INTEGER NOT NULL DEFAULT 0,
            type TEXT NOT NULL,
            data TEXT NOT NULL DEFAULT '{}',
            PRIMARY KEY (task_id, seq)
        ) WITHOUT ROWID
        """
    )
    # Append-only: the record of what happened is never rewritten.
    db.execute(
        """
        CREATE TRIGGER events_no_update BEFORE UPDATE ON events
        BEGIN SELECT RAISE(ABORT, 'events are append-only'); END
        """
    )
    db.execute(
        """
        CREATE TABLE diffs (
            task_id TEXT PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE,
            final INTEGER NOT NULL DEFAULT 0,
            files TEXT NOT NULL DEFAULT '[]',
            updated_at REAL NOT NULL
        )
        """
    )
    db.execute(
        """
        CREATE TABLE hunk_states (
            task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
            hunk_id TEXT NOT NULL,
            state TEXT NOT NULL,
            at REAL NOT NULL,
            PRIMARY KEY (task_id, hunk_id)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE memory (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            root TEXT NOT NULL,
            text TEXT NOT NULL,
            created_at REAL NOT NULL
        )
        """
    )
    db.table("memory").create_index(["root"], index_name="idx_memory_root")
    db.execute(
        """
        CREATE TABLE brokers (
            id TEXT PRIMARY KEY,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            started_at REAL NOT NULL,
            heartbeat REAL NOT NULL
        )
        """
    )
    tasks.enable_fts(FTS_COLUMNS, create_triggers=True, tokenize="porter")


@MIGRATIONS(name="0002_accounts")
def accounts(db: Database) -> None:
    """Cool-downs of rate-limited accounts (shared by every broker) and the evidence ledger."""
    db.execute(
        """
        CREATE TABLE cooldowns (
            worker TEXT PRIMARY KEY,
            provider TEXT NOT NULL DEFAULT '',
            until REAL NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            task_id TEXT,
            recorded_at REAL NOT NULL
        )
        """
    )
    # One row per task: its last worker, model and kind, and how it went. Rewritten as the
    # task settles and as its hunks are decided.
    db.execute(
        """
        CREATE TABLE ledger (
            task_id TEXT PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE,
            worker TEXT NOT NULL,
            provider TEXT NOT NULL DEFAULT '',
            model TEXT,
            kind TEXT NOT NULL,
            root TEXT NOT NULL DEFAULT '',
            state TEXT NOT NULL,
            completion TEXT,
            ok INTEGER NOT NULL DEFAULT 0,
            hunks INTEGER NOT NULL DEFAULT 0,
            hunks_accepted INTEGER NOT NULL DEFAULT 0,
            hunks_decided INTEGER NOT NULL DEFAULT 0,
            duration REAL NOT NULL DEFAULT 0,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cost REAL,
            settled_at REAL NOT NULL
        )
        """
    )
    db.table("ledger").create_index(["worker", "model", "kind"], index_name="idx_ledger_worker")


@MIGRATIONS(name="0003_archive")
def archive(db: Database) -> None:
    """When the user archived a settled task: task lists leave it out, its record stays."""
    db.execute("ALTER TABLE tasks ADD COLUMN archived_at REAL")


@MIGRATIONS(name="0004_bench")
def bench(db: Database) -> None:
    """Bench runs (``baton bench``): each run of a suite, and which case, worker and repeat
    each of its tasks is. How a task went stays in the task and the ledger."""
    db.execute(
        """
        CREATE TABLE bench_runs (
            id TEXT PRIMARY KEY,
            suite TEXT NOT NULL,
            path TEXT,
            root TEXT NOT NULL,
            workers TEXT NOT NULL DEFAULT '[]',
            runs INTEGER NOT NULL DEFAULT 1,
            cases TEXT NOT NULL DEFAULT '[]',
            created_at REAL NOT NULL
        )
        """
    )
    db.execute(
        """
        CREATE TABLE bench_tasks (
            task_id TEXT PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE,
            run_id TEXT NOT NULL,
            suite TEXT NOT NULL,
            case_key TEXT NOT NULL,
            worker TEXT NOT NULL,
            n INTEGER NOT NULL DEFAULT 1,
            note TEXT NOT NULL DEFAULT ''
        )
        """
    )
    db.table("bench_tasks").create_index(["run_id"], index_name="idx_bench_tasks_run")
    db.table("bench_tasks").create_index(["suite", "worker"], index_name="idx_bench_tasks_suite")


def apply(db: Database) -> None:
    """Apply every pending migration, all under one write lock.

    Two brokers may open a new database at the same instant: the lock is taken before the
    pending list is read, so the second one finds the first one's work done instead of
    creating ``tasks`` again. A database already up to date is only read.
    """
    if not MIGRATIONS.pending(db):
        return
    conn = db.conn
    conn.execute("BEGIN IMMEDIATE")
    try:
        MIGRATIONS.apply(db)  # each migration is a savepoint inside this transaction
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
