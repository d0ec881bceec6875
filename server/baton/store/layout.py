"""How tasks, attempts and hunk decisions are laid out in the database's rows: the columns,
the conversions both ways, and the upserts the store's writes share."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from enum import Enum
from typing import Any

from baton.core.diff import HunkState
from baton.core.lifecycle import Completion, TaskState
from baton.core.task import Attempt, Target, Task

TASK_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Task))
_TASK_JSON = frozenset({"targets", "scope", "options"})
TASK_COLS = ", ".join(f'"{name}"' for name in TASK_FIELDS)
TASK_SELECT = ", ".join(f't."{name}"' for name in TASK_FIELDS)
ATTEMPT_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Attempt))
ATTEMPT_COLS = ", ".join(ATTEMPT_FIELDS)


class Keep(Enum):
    """Marks an argument left out on purpose: keep what is stored."""

    KEEP = "keep"


#: ``save_task(task, owner=KEEP)``: leave the stored owner as it is.
KEEP = Keep.KEEP


@dataclass(frozen=True, slots=True)
class Broker:
    """A running broker process, as last reported by its heartbeat."""

    id: str
    pid: int
    host: str
    started_at: float
    heartbeat: float


def fts_query(text: str) -> str:
    """User text as a safe FTS5 query: every whitespace-separated term quoted, all required.

    ``foo-bar "x`` becomes ``"foo-bar" \"""x\"`` (a quote inside a term is doubled); FTS5
    operators in the text (AND, NEAR, ``*``, ``:``) are taken as plain words.
    Returns ``""`` when the text has no searchable characters.
    """
    terms = []
    for raw in text.replace("\0", " ").split():
        term = raw.encode("utf-8", "replace").decode("utf-8")
        if any(ch.isalnum() for ch in term):
            terms.append('"' + term.replace('"', '""') + '"')
    return " ".join(terms)


def task_row(task: Task) -> list[Any]:
    row: list[Any] = []
    for name in TASK_FIELDS:
        value = getattr(task, name)
        if name == "targets":
            value = json.dumps([asdict(t) for t in value], separators=(",", ":"))
        elif name in _TASK_JSON:
            value = json.dumps(value, separators=(",", ":"), default=str)
        elif name in ("state", "completion") and value is not None:
            value = str(value)
        row.append(value)
    return row


def row_task(row: Sequence[Any]) -> Task:
    d = dict(zip(TASK_FIELDS, row, strict=True))
    for name in _TASK_JSON:
        d[name] = json.loads(d[name])
    d["targets"] = [Target(**t) for t in d["targets"]]
    d["state"] = TaskState(d["state"])
    d["completion"] = Completion(d["completion"]) if d["completion"] else None
    return Task(**d)


def put_task(conn: sqlite3.Connection, task: Task, owner: str | Keep | None) -> None:
    names = [*TASK_FIELDS] if isinstance(owner, Keep) else [*TASK_FIELDS, "owner"]
    row = task_row(task) if isinstance(owner, Keep) else [*task_row(task), owner]
    columns = ", ".join(f'"{n}"' for n in names)
    placeholders = ", ".join("?" for _ in names)
    updates = ", ".join(f'"{n}" = excluded."{n}"' for n in names if n != "id")
    conn.execute(
        f"INSERT INTO tasks ({columns}) VALUES ({placeholders}) "
        f"ON CONFLICT(id) DO UPDATE SET {updates}",
        row,
    )


def put_attempt(conn: sqlite3.Connection, attempt: Attempt) -> None:
    row = attempt.to_json()
    placeholders = ", ".join("?" for _ in ATTEMPT_FIELDS)
    updates = ", ".join(f"{n} = excluded.{n}" for n in ATTEMPT_FIELDS[2:])
    conn.execute(
        f"INSERT INTO attempts ({ATTEMPT_COLS}) VALUES ({placeholders}) "
        f"ON CONFLICT(task_id, n) DO UPDATE SET {updates}",
        [row[n] for n in ATTEMPT_FIELDS],
    )


def put_hunks(conn: sqlite3.Connection, task_id: str, states: Mapping[str, HunkState]) -> None:
    now = time.time()
    conn.executemany(
        "INSERT INTO hunk_states (task_id, hunk_id, state, at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(task_id, hunk_id) DO UPDATE SET state = excluded.state, at = excluded.at",
        [(task_id, h, str(HunkState(s)), now) for h, s in states.items()],
    )
