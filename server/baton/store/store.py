"""The Store: Baton's durable record of tasks, attempts, events, diffs and memory in SQLite.

One ``Store`` owns one connection and is used by one thread at a time (the runtime's writer
thread, or :class:`AsyncStore`'s executor). It opens the database in WAL mode with
``synchronous=NORMAL`` and applies pending migrations on open.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import baton.store.layout as layout
from baton.core.diff import FileDiff, HunkState
from baton.core.events import Event, EventType
from baton.core.ids import MIN_PREFIX
from baton.core.lifecycle import SETTLED, TaskState
from baton.core.task import Attempt, Task
from baton.store.errors import AmbiguousTask, StoreError, UnknownTask
from baton.store.layout import KEEP, Keep
from baton.store.listing import events_of_type, listing
from baton.store.opening import Connection

#: An event's data as stored: compact JSON, what JSON cannot hold as text (one encoder,
#: not one built per ``json.dumps`` call with options).
_data_json = json.JSONEncoder(separators=(",", ":"), default=str).encode


class Store(Connection):
    """Synchronous access to the database at ``path``; created and migrated on open."""

    # -------------------------------------------------------------------- tasks

    def insert_task(
        self, task: Task, *, owner: str | None = None, admit: Callable[[Store], None] | None = None
    ) -> None:
        """Store a new task. Stamps ``created_at``/``updated_at`` on ``task`` when they are 0."""
        self.insert_tasks([task], owner=owner, admit=admit)

    def insert_tasks(
        self,
        tasks: Iterable[Task],
        *,
        owner: str | None = None,
        admit: Callable[[Store], None] | None = None,
    ) -> int:
        """Store new tasks in one transaction (stamping times as :meth:`insert_task`).
        ``admit`` runs first inside it, holding the write lock: what it raises stores nothing."""
        now = time.time()
        rows = []
        for task in tasks:
            if not task.created_at:
                task.created_at = now
            if not task.updated_at:
                task.updated_at = task.created_at
            rows.append([*layout.task_row(task), owner])
        placeholders = ", ".join("?" for _ in range(len(layout.TASK_FIELDS) + 1))
        try:
            with self._write(f"insert {len(rows)} tasks") as conn:
                if admit is not None:
                    admit(self)
                conn.executemany(
                    f"INSERT INTO tasks ({layout.TASK_COLS}, owner) VALUES ({placeholders})", rows
                )
        except StoreError as exc:
            if isinstance(exc.__cause__, sqlite3.IntegrityError):
                ids = ", ".join(str(r[0]) for r in rows[:3]) + (", …" if len(rows) > 3 else "")
                what = f"task {ids} already exists" if len(rows) == 1 else f"a task of {ids} exists"
                raise StoreError(what) from exc.__cause__
            raise
        return len(rows)

    def save_task(self, task: Task, *, owner: str | Keep | None = KEEP) -> None:
        """Insert or fully replace a task's fields; its owner is set if given, else kept."""
        with self._write(f"save task {task.id}") as conn:
            layout.put_task(conn, task, owner)

    def record(
        self,
        task: Task,
        *,
        owner: str | Keep | None = KEEP,
        attempt: Attempt | None = None,
        hunks: Mapping[str, HunkState] | None = None,
    ) -> None:
        """Save ``task`` with an attempt and/or hunk decisions in ONE transaction: a step's
        record (an attempt about to start, decisions and the state they lead to) is all
        there or not at all."""
        try:
            with self._write(f"record a step of task {task.id}") as conn:
                layout.put_task(conn, task, owner)
                if attempt is not None:
                    layout.put_attempt(conn, attempt)
                if hunks:
                    layout.put_hunks(conn, task.id, hunks)
        except StoreError as exc:
            if isinstance(exc.__cause__, sqlite3.IntegrityError):
                raise UnknownTask(task.id) from exc.__cause__
            raise

    def find_task(self, task_id: str) -> Task | None:
        """The task with exactly this id, or None."""
        rows = self._rows(f"SELECT {layout.TASK_SELECT} FROM tasks t WHERE t.id = ?", (task_id,))
        return layout.row_task(rows[0]) if rows else None

    def get_task(self, task_id: str) -> Task:
        """The task with exactly this id; raises :class:`UnknownTask`."""
        task = self.find_task(task_id)
        if task is None:
            raise UnknownTask(task_id)
        return task

    def resolve_id(self, prefix: str) -> str:
        """The full id of the task named by ``prefix``: a full id or a unique prefix ≥ 4 chars."""
        if self._rows("SELECT 1 FROM tasks WHERE id = ?", (prefix,)):
            return prefix
        if len(prefix) < MIN_PREFIX:
            raise UnknownTask(prefix, f"give at least {MIN_PREFIX} characters of the id")
        rows = self._rows(
            "SELECT id FROM tasks WHERE id >= ? AND id < ? ORDER BY id LIMIT 20",
            (prefix, prefix + "\U0010ffff"),
        )
        if not rows:
            raise UnknownTask(prefix)
        if len(rows) > 1:
            raise AmbiguousTask(prefix, [r[0] for r in rows])
        return str(rows[0][0])

    def list_tasks(
        self,
        *,
        states: Iterable[TaskState | str] | None = None,
        query: str | None = None,
        since: float | None = None,
        worker: str | None = None,
        group: str | None = None,
        root: str | None = None,
        archived: bool | None = None,
        limit: int | None = 100,
    ) -> list[Task]:
        """Tasks matching every given filter, newest first.

        ``query`` is full-text search over title, instruction, brief and summary (every word
        must appear; any text is safe). ``since`` keeps tasks created at or after that time.
        ``archived``: True keeps only archived tasks, False leaves them out, None keeps both.
        """
        found = listing(
            states=states, query=query, since=since, worker=worker, group=group, root=root,
            archived=archived, limit=limit,
        )  # fmt: skip
        if found is None:
            return []
        sql, params = found
        return [layout.row_task(r) for r in self._rows(sql, params)]

    def set_archived(
        self, task_ids: Sequence[str], at: float | None, states: Iterable[TaskState | str]
    ) -> list[str]:
        """Archive the tasks (``at``: when) or unarchive them (None), in one transaction; only
        those in one of ``states`` change. Returns the ids that did."""
        allowed = list(dict.fromkeys(str(s) for s in states))
        marks = ", ".join("?" for _ in allowed)
        changed = []
        with self._write(f"archive {len(task_ids)} tasks") as conn:
            for task_id in task_ids:
                cur = conn.execute(
                    f"UPDATE tasks SET archived_at = ? WHERE id = ? AND state IN ({marks})",
                    [at, task_id, *allowed],
                )
                if cur.rowcount:
                    changed.append(task_id)
        return changed

    def count_by_state(self, root: str | None = None) -> dict[str, int]:
        """How many tasks are in each state (states with none are left out)."""
        if root is None:
            rows = self._rows("SELECT state, count(*) FROM tasks GROUP BY state")
        else:
            rows = self._rows(
                "SELECT state, count(*) FROM tasks WHERE root = ? GROUP BY state", (root,)
            )
        return {str(state): int(n) for state, n in rows}

    def set_owner(self, task_id: str, owner: str | None) -> None:
        """Record which broker supervises the task (None: nobody)."""
        with self._write(f"set the owner of task {task_id}") as conn:
            cur = conn.execute("UPDATE tasks SET owner = ? WHERE id = ?", (owner, task_id))
            if cur.rowcount == 0:
                raise UnknownTask(task_id)

    def owner_of(self, task_id: str) -> str | None:
        """The broker that supervises the task, if any; raises :class:`UnknownTask`."""
        rows = self._rows("SELECT owner FROM tasks WHERE id = ?", (task_id,))
        if not rows:
            raise UnknownTask(task_id)
        return None if rows[0][0] is None else str(rows[0][0])

    def task_with_owner(self, task_id: str) -> tuple[Task, str | None]:
        """The task and the broker that supervises it; raises :class:`UnknownTask`."""
        rows = self._rows(
            f"SELECT {layout.TASK_SELECT}, t.owner FROM tasks t WHERE t.id = ?", (task_id,)
        )
        if not rows:
            raise UnknownTask(task_id)
        return layout.row_task(rows[0][:-1]), rows[0][-1]

    def tasks_with_owner(
        self, *, states: Iterable[TaskState | str] | None = None
    ) -> list[tuple[Task, str | None]]:
        """Tasks (in the given states, if any) with their owners, oldest first."""
        sql = f"SELECT {layout.TASK_SELECT}, t.owner FROM tasks t"
        params: list[str] = []
        if states is not None:
            params = list(dict.fromkeys(str(s) for s in states))
            if not params:
                return []
            sql += f" WHERE t.state IN ({', '.join('?' for _ in params)})"
        rows = self._rows(sql + " ORDER BY t.created_at, t.id", params)
        return [(layout.row_task(r[:-1]), r[-1]) for r in rows]

    def orphaned_tasks(self, max_age: float) -> list[Task]:
        """Unsettled tasks whose owner is no broker with a heartbeat in the last ``max_age`` s."""
        settled = [str(s) for s in SETTLED]
        rows = self._rows(
            f"SELECT {layout.TASK_SELECT} FROM tasks t WHERE t.state NOT IN "
            f"({', '.join('?' for _ in settled)}) AND (t.owner IS NULL OR t.owner NOT IN "
            "(SELECT id FROM brokers WHERE heartbeat >= ?)) ORDER BY t.created_at",
            [*settled, time.time() - max_age],
        )
        return [layout.row_task(r) for r in rows]

    # ----------------------------------------------------------------- attempts

    def save_attempt(self, attempt: Attempt) -> None:
        """Insert or replace an attempt (keyed by task id and number)."""
        try:
            with self._write(f"save attempt {attempt.n} of task {attempt.task_id}") as conn:
                layout.put_attempt(conn, attempt)
        except StoreError as exc:
            if isinstance(exc.__cause__, sqlite3.IntegrityError):
                raise UnknownTask(attempt.task_id) from exc.__cause__
            raise

    def attempts(self, task_id: str) -> list[Attempt]:
        """The task's attempts, first to last."""
        rows = self._rows(
            f"SELECT {layout.ATTEMPT_COLS} FROM attempts WHERE task_id = ? ORDER BY n", (task_id,)
        )
        return [Attempt.from_json(dict(zip(layout.ATTEMPT_FIELDS, r, strict=True))) for r in rows]

    # ------------------------------------------------------------------- events

    def last_seq(self, task_id: str) -> int:
        """The seq of the task's last stored event (0 when it has none)."""
        cached = self._last_seq.get(task_id)
        if cached is not None:
            return cached
        rows = self._rows("SELECT max(seq) FROM events WHERE task_id = ?", (task_id,))
        return int(rows[0][0] or 0)

    def _load_seq(self, task_id: str) -> int:
        """Fill the seq cache for a task about to get events; raises UnknownTask."""
        cached = self._last_seq.get(task_id)
        if cached is not None:
            return cached
        if not self._rows("SELECT 1 FROM tasks WHERE id = ?", (task_id,)):
            raise UnknownTask(task_id)
        seq = self.last_seq(task_id)
        self._last_seq[task_id] = seq
        return seq

    def append_events(
        self, events: Sequence[Event], *, offsets: Sequence[tuple[str, int, int]] = ()
    ) -> list[Event]:
        """Persist a batch in one transaction and return it stamped.

        Each event gets the next ``seq`` of its task (contiguous, continuing from the last
        stored one) and ``ts = time.time()`` when its ``ts`` is 0. ``offsets`` are
        ``(task id, attempt n, byte offset)``: how far each attempt's output file has been
        read, stored with the events it produced (an attempt not yet saved is skipped).
        Nothing of the batch is stored if any part fails. The last seq of each task is
        cached: should another process have appended to the same task meanwhile, the batch
        is renumbered once.
        """
        if not events and not offsets:
            return []
        now = time.time()
        # One update per attempt, to the last offset given (one is given per line read).
        last = {(task_id, n): offset for task_id, n, offset in offsets}
        for retry in (False, True):
            stamped, rows, next_seq = self._stamp(events, now)
            try:
                with self._write(f"append {len(rows)} events") as conn:
                    conn.executemany(
                        "INSERT INTO events (task_id, seq, ts, attempt, type, data) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        rows,
                    )
                    conn.executemany(
                        "UPDATE attempts SET out_offset = ? WHERE task_id = ? AND n = ?",
                        [(offset, task_id, n) for (task_id, n), offset in last.items()],
                    )
            except StoreError as exc:
                if retry or not isinstance(exc.__cause__, sqlite3.IntegrityError):
                    raise
                for task_id in next_seq:  # stale cache: reload from the database
                    self._last_seq.pop(task_id, None)
                continue
            self._last_seq.update(next_seq)
            return stamped
        raise AssertionError("unreachable")

    def _stamp(
        self, events: Sequence[Event], now: float
    ) -> tuple[list[Event], list[tuple[Any, ...]], dict[str, int]]:
        """Number and time-stamp a batch: the events, their rows, each task's new last seq."""
        next_seq: dict[str, int] = {}
        stamped: list[Event] = []
        rows: list[tuple[Any, ...]] = []
        for ev in events:
            seq = next_seq.get(ev.task_id)
            if seq is None:
                seq = self._load_seq(ev.task_id)
            seq += 1
            next_seq[ev.task_id] = seq
            # (built directly: dataclasses.replace costs twice as much, per event)
            out = Event(ev.type, ev.data, ev.task_id, seq, ev.ts or now, ev.attempt)
            stamped.append(out)
            data = _data_json(out.data)
            rows.append((out.task_id, seq, out.ts, out.attempt, str(out.type), data))
        return stamped, rows, next_seq

    def events(self, task_id: str, after_seq: int = 0, limit: int | None = None) -> list[Event]:
        """The task's events with ``seq > after_seq``, in order."""
        sql = (
            "SELECT seq, ts, attempt, type, data FROM events "
            "WHERE task_id = ? AND seq > ? ORDER BY seq"
        )
        params: list[Any] = [task_id, after_seq]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [
            Event(
                type=EventType(type_),
                data=json.loads(data),
                task_id=task_id,
                seq=seq,
                ts=ts,
                attempt=attempt,
            )
            for seq, ts, attempt, type_, data in self._rows(sql, params)
        ]

    def events_of_type(self, task_ids: Sequence[str], type_: EventType) -> list[Event]:
        """The events of one type of several tasks, in order per task (a dashboard's
        timelines: the ``state`` events of a thousand tasks in a few queries)."""
        out: list[Event] = []
        for sql, params in events_of_type(task_ids, str(type_)):
            out.extend(
                Event(type_, json.loads(data), task_id=tid, seq=seq, ts=ts, attempt=attempt)
                for tid, seq, ts, attempt, data in self._rows(sql, params)
            )
        return out

    # ------------------------------------------------------------ diffs, hunks

    def save_diff(self, task_id: str, files: Sequence[FileDiff], final: bool) -> None:
        """Replace the task's stored diff (``final``: the worker has finished)."""
        payload = json.dumps([f.to_json() for f in files], separators=(",", ":"))
        try:
            with self._write(f"save the diff of task {task_id}") as conn:
                conn.execute(
                    "INSERT INTO diffs (task_id, final, files, updated_at) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT(task_id) DO UPDATE SET final = excluded.final, "
                    "files = excluded.files, updated_at = excluded.updated_at",
                    (task_id, int(final), payload, time.time()),
                )
        except StoreError as exc:
            if isinstance(exc.__cause__, sqlite3.IntegrityError):
                raise UnknownTask(task_id) from exc.__cause__
            raise

    def load_diff(self, task_id: str) -> tuple[list[FileDiff], bool] | None:
        """The task's stored diff and whether it is final, or None if none was saved.

        Hunk states are as saved; apply :meth:`hunk_states` with ``core.diff.with_states``.
        """
        rows = self._rows("SELECT files, final FROM diffs WHERE task_id = ?", (task_id,))
        if not rows:
            return None
        files, final = rows[0]
        return [FileDiff.from_json(f) for f in json.loads(files)], bool(final)

    def set_hunk_states(self, task_id: str, states: Mapping[str, HunkState]) -> None:
        """Record decisions on hunks (hunk id → state), replacing earlier ones."""
        try:
            with self._write(f"save hunk decisions of task {task_id}") as conn:
                layout.put_hunks(conn, task_id, states)
        except StoreError as exc:
            if isinstance(exc.__cause__, sqlite3.IntegrityError):
                raise UnknownTask(task_id) from exc.__cause__
            raise

    def hunk_states(self, task_id: str) -> dict[str, HunkState]:
        """The recorded decision for each hunk of the task."""
        rows = self._rows("SELECT hunk_id, state FROM hunk_states WHERE task_id = ?", (task_id,))
        return {str(h): HunkState(s) for h, s in rows}

    # ------------------------------------------------------------------- memory

    def add_memory(self, root: str, text: str) -> int:
        """Remember a fact about the project at ``root``; returns its id."""
        with self._write("add a memory") as conn:
            cur = conn.execute(
                "INSERT INTO memory (root, text, created_at) VALUES (?, ?, ?)",
                (root, text, time.time()),
            )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def list_memory(self, root: str) -> list[tuple[int, str]]:
        """The project's remembered facts (id, text), oldest first."""
        rows = self._rows("SELECT id, text FROM memory WHERE root = ? ORDER BY id", (root,))
        return [(int(i), str(t)) for i, t in rows]

    def remove_memory(self, memory_id: int) -> bool:
        """Forget a fact; False if there was none with this id."""
        with self._write(f"remove memory {memory_id}") as conn:
            cur = conn.execute("DELETE FROM memory WHERE id = ?", (memory_id,))
        return cur.rowcount > 0

    # ------------------------------------------------------------------ brokers

    def register_broker(self, broker_id: str, pid: int, host: str | None = None) -> None:
        """Announce a broker (or re-announce one that restarted under the same id)."""
        now = time.time()
        with self._write(f"register broker {broker_id}") as conn:
            conn.execute(
                "INSERT INTO brokers (id, pid, host, started_at, heartbeat) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET pid = excluded.pid, "
                "host = excluded.host, started_at = excluded.started_at, "
                "heartbeat = excluded.heartbeat",
                (broker_id, pid, host or socket.gethostname(), now, now),
            )

    def heartbeat(self, broker_id: str) -> None:
        """Say the broker is still alive."""
        with self._write(f"heartbeat broker {broker_id}") as conn:
            conn.execute("UPDATE brokers SET heartbeat = ? WHERE id = ?", (time.time(), broker_id))

    def unregister_broker(self, broker_id: str) -> None:
        """Forget a broker that is shutting down."""
        with self._write(f"unregister broker {broker_id}") as conn:
            conn.execute("DELETE FROM brokers WHERE id = ?", (broker_id,))

    def live_brokers(self, max_age: float) -> list[layout.Broker]:
        """Brokers whose last heartbeat is at most ``max_age`` seconds old."""
        rows = self._rows(
            "SELECT id, pid, host, started_at, heartbeat FROM brokers "
            "WHERE heartbeat >= ? ORDER BY started_at",
            (time.time() - max_age,),
        )
        return [layout.Broker(*r) for r in rows]
