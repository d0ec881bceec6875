"""Export the record to a file and import it into another state home (``baton export`` and
``baton import``): tasks, attempts, events, diffs, hunk decisions, the ledger, cool-downs,
project memory and bench runs.

The format (``docs/reference/export.md``) is JSON Lines: a header naming the format, its
version and each table's columns; one line per row (``{"t": table, "r": [values…]}``, values
in the header's column order, parents before their children); and an end line with the count
of rows per table, so a cut file is refused rather than half imported. Brokers are not
exported (they are processes of one machine), nor the full-text index (rebuilt as the rows
arrive).

An export reads one consistent snapshot (a read transaction). An import is one transaction:
it adds what the home does not have and changes nothing it has — a task whose id is already
there is skipped with all its rows and said so — so importing the same file twice adds
nothing the second time. Imported tasks have no owner: one still live when exported is taken
up by a broker's adoption sweep, as after a crash.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from baton import __version__
from baton.store.errors import StoreError
from baton.store.store import Store

FORMAT = "baton-export"
VERSION = 1

#: The tables that travel, parents first; ``None``: the table has no task column.
TABLES: dict[str, str | None] = {
    "tasks": "id",
    "attempts": "task_id",
    "events": "task_id",
    "diffs": "task_id",
    "hunk_states": "task_id",
    "ledger": "task_id",
    "cooldowns": None,
    "memory": None,
    "bench_runs": None,
    "bench_tasks": "task_id",
}
#: The column ``--since`` compares, per table without a task column.
_STAMP = {"cooldowns": "recorded_at", "memory": "created_at", "bench_runs": "created_at"}


class TransferError(StoreError):
    """The file is not a Baton export this version can read, or does not fit the database."""


@dataclass
class Report:
    """What an export wrote, or an import added and skipped, table by table."""

    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    skipped_tasks: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "skipped_tasks": self.skipped_tasks}


# ---------------------------------------------------------------------------------- export


def export(store: Store, target: Path | IO[str], *, since: float | None = None) -> Report:
    """Write the record (tasks updated at or after ``since``, with their rows) to ``target``:
    a file, replaced atomically and readable only by the user, or an open text stream."""
    if not isinstance(target, Path):
        return _write(store, target, since)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            report = _write(store, f, since)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return report


def _write(store: Store, out: IO[str], since: float | None) -> Report:
    conn = store.db.conn
    report = Report()
    try:
        conn.execute("BEGIN")  # one snapshot for every table
        try:
            columns = {t: _columns(conn, t) for t in TABLES}
            header = {
                "format": FORMAT,
                "version": VERSION,
                "baton": __version__,
                "exported_at": time.time(),
                "since": since,
                "tables": columns,
            }
            out.write(json.dumps(header, separators=(",", ":")) + "\n")
            for table in TABLES:
                for row in _select(conn, table, columns[table], since):
                    out.write(json.dumps({"t": table, "r": row}, separators=(",", ":")) + "\n")
                    report.rows[table] += 1
            out.write(json.dumps({"end": True, "rows": report.rows}) + "\n")
        finally:
            conn.execute("COMMIT")
    except sqlite3.Error as exc:
        raise StoreError(f"could not export {store.path}: {exc}") from exc
    return report


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [str(r[1]) for r in conn.execute(f'PRAGMA table_info("{table}")')]


def _select(
    conn: sqlite3.Connection, table: str, columns: Sequence[str], since: float | None
) -> Iterator[list[Any]]:
    names = ", ".join(f'"{c}"' for c in columns)
    key = TABLES[table]
    params: tuple[float, ...] = ()
    if since is None:
        sql = f'SELECT {names} FROM "{table}"'
    elif key is None:
        sql, params = f'SELECT {names} FROM "{table}" WHERE "{_STAMP[table]}" >= ?', (since,)
    else:
        chosen = "SELECT id FROM tasks WHERE updated_at >= ?"
        sql, params = f'SELECT {names} FROM "{table}" WHERE "{key}" IN ({chosen})', (since,)
    order = {"tasks": "created_at, id", "events": "task_id, seq", "memory": "id"}.get(table)
    if order:
        sql += f" ORDER BY {order}"
    for row in conn.execute(sql, params):
        yield list(row)


# ---------------------------------------------------------------------------------- import


def import_(store: Store, source: Path | IO[str]) -> Report:
    """Add the rows of an export the database does not have, in one transaction."""
    if isinstance(source, Path):
        try:
            with source.open(encoding="utf-8") as f:
                return _read(store, f, str(source))
        except OSError as exc:
            raise TransferError(f"cannot read {source}: {exc}") from exc
    return _read(store, source, "standard input")


def _read(store: Store, lines: IO[str], name: str) -> Report:
    header = _header(lines.readline(), name)
    conn = store.db.conn
    theirs: dict[str, list[str]] = header["tables"]
    ours = {t: set(_columns(conn, t)) for t in TABLES}
    for table, cols in theirs.items():
        if table not in TABLES:
            raise TransferError(f"{name}: unknown table {table!r} (from a newer Baton?)")
        extra = [c for c in cols if c not in ours[table]]
        if extra:
            raise TransferError(
                f"{name}: table {table} has columns this Baton does not know: {extra} "
                "(export from a newer Baton; upgrade this one to import it)"
            )
    report = Report()
    read = dict.fromkeys(TABLES, 0)
    skipped: set[str] = set()
    ended: dict[str, Any] | None = None
    try:
        with store.db.atomic():
            for n, line in enumerate(lines, start=2):
                if not line.strip():
                    continue
                if ended is not None:
                    raise TransferError(f"{name}, line {n}: rows after the end line")
                msg = _line(line, name, n)
                if msg.get("end") is True:
                    ended = msg
                    continue
                where, values = msg.get("t"), msg.get("r")
                if not isinstance(where, str) or where not in theirs:
                    raise TransferError(f"{name}, line {n}: not a row of a known table")
                if not isinstance(values, list) or len(values) != len(theirs[where]):
                    raise TransferError(f"{name}, line {n}: not a row of {where}")
                row = dict(zip(theirs[where], values, strict=True))
                read[where] += 1
                if _add(conn, where, row, skipped):
                    report.rows[where] += 1
            if ended is None:
                raise TransferError(f"{name}: no end line (the file was cut); nothing imported")
            counted = {t: n for t, n in (ended.get("rows") or {}).items() if n}
            if counted != {t: n for t, n in read.items() if n}:
                raise TransferError(
                    f"{name}: its end line counts {counted} rows, the file has {read}; "
                    "nothing imported"
                )
    except sqlite3.Error as exc:
        raise TransferError(f"{name}: the rows do not fit the database: {exc}") from exc
    report.skipped_tasks = sorted(skipped)
    return report


def _header(line: str, name: str) -> dict[str, Any]:
    try:
        header = json.loads(line)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise TransferError(f"{name}: not a Baton export (it has no {FORMAT!r} header)")
    version = header.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise TransferError(
            f"{name}: export format version {version!r}; this Baton reads up to {VERSION}"
        )
    tables = header.get("tables")
    if not isinstance(tables, dict) or not all(
        isinstance(c, list) and all(isinstance(x, str) for x in c) for c in tables.values()
    ):
        raise TransferError(f"{name}: the header lists no table columns")
    return header


def _line(line: str, name: str, n: int) -> dict[str, Any]:
    try:
        msg = json.loads(line)
    except ValueError as exc:
        raise TransferError(f"{name}, line {n}: not JSON ({exc})") from None
    if not isinstance(msg, dict):
        raise TransferError(f"{name}, line {n}: not a row")
    return msg


def _add(conn: sqlite3.Connection, table: str, row: dict[str, Any], skipped: set[str]) -> bool:
    """Insert one row unless the database has it; True when it was added."""
    key = TABLES[table]
    if table == "tasks":
        if conn.execute("SELECT 1 FROM tasks WHERE id = ?", (row["id"],)).fetchone():
            skipped.add(str(row["id"]))
            return False
        row = {**row, "owner": None}  # its brokers are another home's
    elif key is not None and row.get(key) in skipped:
        return False
    elif table == "memory":
        same = conn.execute(
            "SELECT id FROM memory WHERE root = ? AND text = ? AND created_at = ?",
            (row.get("root"), row.get("text"), row.get("created_at")),
        ).fetchone()
        if same:
            return False
        if conn.execute("SELECT 1 FROM memory WHERE id = ?", (row.get("id"),)).fetchone():
            row = {k: v for k, v in row.items() if k != "id"}  # a new number here
    names = list(row)
    cols = ", ".join(f'"{c}"' for c in names)
    marks = ", ".join("?" for _ in names)
    verb = "INSERT OR IGNORE" if table in ("cooldowns", "ledger", "bench_runs") else "INSERT"
    cur = conn.execute(f'{verb} INTO "{table}" ({cols}) VALUES ({marks})', list(row.values()))
    return cur.rowcount > 0
