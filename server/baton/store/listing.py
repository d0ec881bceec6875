"""The SQL of a task listing (``Store.list_tasks``): its filters, and the one index SQLite
walks in (created_at, id) order so that it stops at the limit instead of sorting every
match; and of one type of event across tasks (``Store.events_of_type``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import baton.store.layout as layout
from baton.core.lifecycle import TaskState


def listing(
    *,
    states: Iterable[TaskState | str] | None,
    query: str | None,
    since: float | None,
    worker: str | None,
    group: str | None,
    root: str | None,
    archived: bool | None,
    limit: int | None,
) -> tuple[str, list[Any]] | None:
    """The query and its parameters, or None when nothing can match (no states, or search
    text with nothing searchable)."""
    where: list[str] = []
    params: list[Any] = []
    wanted = None if states is None else list(dict.fromkeys(str(s) for s in states))
    if wanted is not None:
        if not wanted:
            return None
        where.append(f"t.state IN ({', '.join('?' for _ in wanted)})")
        params.extend(wanted)
    filters = {"group": group, "worker": worker, "root": root}
    for column, value in filters.items():
        if value is not None:
            where.append(f't."{column}" = ?')
            params.append(value)
    if since is not None:
        where.append("t.created_at >= ?")
        params.append(since)
    if archived is not None:
        where.append(f"t.archived_at IS {'NOT ' if archived else ''}NULL")
    if query is not None:
        match = layout.fts_query(query)
        if not match:
            return None
        where.append("t.rowid IN (SELECT rowid FROM tasks_fts WHERE tasks_fts MATCH ?)")
        params.append(match)
    # Walk one index in (created_at, id) order and stop at the LIMIT: never sort every
    # match of a common word or a crowded state. The index is the first given filter in
    # a fixed order of how selective they usually are; with none, creation time.
    given = [c for c, v in filters.items() if v is not None]
    if wanted is not None:
        given.insert(1 if group is not None else 0, "state")
    index = f"idx_tasks_{given[0]}" if given else "idx_tasks_created"
    sql = f"SELECT {layout.TASK_SELECT} FROM tasks t INDEXED BY {index}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY t.created_at DESC, t.id DESC"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return sql, params


#: Task ids per query of :func:`events_of_type` (SQLite's limit on parameters is higher).
_IDS_PER_QUERY = 500


def events_of_type(task_ids: Sequence[str], type_: str) -> Iterator[tuple[str, list[Any]]]:
    """The queries reading the events of one type of these tasks, in order per task: rows of
    (task_id, seq, ts, attempt, data); the primary key (task_id, seq) serves each."""
    ids = list(dict.fromkeys(task_ids))
    for start in range(0, len(ids), _IDS_PER_QUERY):
        chunk = ids[start : start + _IDS_PER_QUERY]
        marks = ", ".join("?" * len(chunk))
        sql = (
            "SELECT task_id, seq, ts, attempt, data FROM events "
            f"WHERE task_id IN ({marks}) AND type = ? ORDER BY task_id, seq"
        )
        yield sql, [*chunk, type_]
