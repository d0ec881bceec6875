"""Accounts in the store: cool-downs of rate-limited workers and the evidence ledger.

Both live in the shared database, so every broker sees them: a worker one broker saw rate
limited is passed over by all until its reset, and every broker breaks routing ties with
the same evidence. Functions take a :class:`~baton.store.Store` and run on its thread.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from baton.core import usage
from baton.core.diff import HunkState
from baton.core.lifecycle import Completion, TaskState
from baton.core.routing import Evidence
from baton.core.task import Task
from baton.store import Store

#: States after which a task counts as settled ok (it produced an answer or a change).
_OK_STATES = {TaskState.REVIEW, TaskState.ANSWERED, TaskState.APPLIED, TaskState.REJECTED}


@dataclass(frozen=True, slots=True)
class Cooldown:
    worker: str
    provider: str
    until: float
    reason: str
    task_id: str | None
    recorded_at: float

    def to_json(self) -> dict[str, Any]:
        return {
            "worker": self.worker,
            "provider": self.provider,
            "until": self.until,
            "reason": self.reason,
            "taskId": self.task_id,
            "recordedAt": self.recorded_at,
        }


def record_cooldown(
    store: Store,
    worker: str,
    provider: str,
    until: float,
    reason: str = "",
    task_id: str | None = None,
) -> None:
    """Note that ``worker`` may not be used before ``until`` (the later of two notes wins)."""
    with store.db.atomic():
        store.db.execute(
            """
            INSERT INTO cooldowns (worker, provider, until, reason, task_id, recorded_at)
            VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT(worker) DO UPDATE SET
                provider = excluded.provider,
                reason = CASE WHEN excluded.until >= cooldowns.until
                              OR cooldowns.until < excluded.recorded_at
                         THEN excluded.reason ELSE cooldowns.reason END,
                task_id = CASE WHEN excluded.until >= cooldowns.until
                               OR cooldowns.until < excluded.recorded_at
                          THEN excluded.task_id ELSE cooldowns.task_id END,
                until = CASE WHEN cooldowns.until < excluded.recorded_at
                        THEN excluded.until ELSE MAX(cooldowns.until, excluded.until) END,
                recorded_at = excluded.recorded_at
            """,
            [worker, provider, until, reason, task_id, time.time()],
        )


def cooldowns(store: Store, now: float | None = None) -> dict[str, Cooldown]:
    """Cool-downs still running at ``now``, by worker."""
    now = time.time() if now is None else now
    rows = store.db.execute(
        "SELECT worker, provider, until, reason, task_id, recorded_at FROM cooldowns "
        "WHERE until > ? ORDER BY until",
        [now],
    ).fetchall()
    return {r[0]: Cooldown(*r) for r in rows}


def clear_cooldown(store: Store, worker: str) -> bool:
    with store.db.atomic():
        cur = store.db.execute("DELETE FROM cooldowns WHERE worker = ?", [worker])
    return bool(cur.rowcount)


# -- the evidence ledger -----------------------------------------------------------------------


def record_outcome(store: Store, task: Task) -> None:
    """Write (or rewrite) the ledger row of a settled task or one in review."""
    found = store.load_diff(task.id)
    states = store.hunk_states(task.id)
    hunk_ids = [h.id for f in (found[0] if found else []) for h in f.hunks]
    decided = [states.get(h, HunkState.PENDING) for h in hunk_ids]
    accepted = sum(1 for s in decided if s == HunkState.ACCEPTED)
    n_decided = sum(1 for s in decided if s != HunkState.PENDING)
    duration = 0.0
    for a in store.attempts(task.id):
        if a.ended_at is not None and a.started_at:
            duration += max(0.0, a.ended_at - a.started_at)
    used = usage.of_task(task.options)
    ok = task.state in _OK_STATES and task.completion in (None, Completion.COMPLETED)
    row = {
        "task_id": task.id,
        "worker": task.worker,
        "provider": task.provider,
        "model": task.model,
        "kind": task.kind,
        "root": task.root,
        "state": str(task.state),
        "completion": str(task.completion) if task.completion else None,
        "ok": int(ok),
        "hunks": len(hunk_ids),
        "hunks_accepted": accepted,
        "hunks_decided": n_decided,
        "duration": duration,
        "input_tokens": used.input + used.cached_input,  # all input, cached or not
        "output_tokens": used.output,
        "cost": used.cost,
        "settled_at": task.settled_at or time.time(),
    }
    # One statement, so the write lock is asked for first and waited for (busy timeout):
    # a read before the write in the same transaction could fail at once with "database
    # is locked" when another connection committed in between.
    columns = ", ".join(row)
    updates = ", ".join(f"{c} = excluded.{c}" for c in row if c != "task_id")
    with store.db.atomic():
        store.db.execute(
            f"INSERT INTO ledger ({columns}) VALUES ({', '.join('?' for _ in row)}) "
            f"ON CONFLICT(task_id) DO UPDATE SET {updates}",
            list(row.values()),
        )


#: Bench tasks (``baton bench``) stay out of the routing evidence and the per-worker table:
#: the bench rejects their hunks, which says nothing of the work (``bench_stats`` sums them).
_NOT_BENCH = "task_id NOT IN (SELECT task_id FROM bench_tasks)"


def evidence(store: Store) -> dict[tuple[str, str | None, str], Evidence]:
    """Evidence per (worker, model, kind), for breaking routing ties."""
    rows = store.db.execute(
        "SELECT worker, model, kind, COUNT(*), SUM(ok), SUM(hunks_decided), SUM(hunks_accepted) "
        f"FROM ledger WHERE {_NOT_BENCH} GROUP BY worker, model, kind"
    ).fetchall()
    return {(w, m, k): Evidence(int(n), int(ok), int(d), int(a)) for w, m, k, n, ok, d, a in rows}


@dataclass(frozen=True, slots=True)
class Stat:
    """The ledger summed over one worker, model and kind."""

    worker: str
    model: str | None
    kind: str
    tasks: int
    ok: int
    hunks_decided: int
    hunks_accepted: int
    duration: float  # mean seconds per task
    input_tokens: int
    output_tokens: int
    cost: float | None

    @property
    def ok_share(self) -> float:
        return self.ok / self.tasks if self.tasks else 0.0

    @property
    def accepted_share(self) -> float | None:
        return self.hunks_accepted / self.hunks_decided if self.hunks_decided else None

    def to_json(self) -> dict[str, Any]:
        return {
            "worker": self.worker,
            "model": self.model,
            "kind": self.kind,
            "tasks": self.tasks,
            "ok": self.ok,
            "okShare": round(self.ok_share, 3),
            "hunksDecided": self.hunks_decided,
            "hunksAccepted": self.hunks_accepted,
            "acceptedShare": (
                round(self.accepted_share, 3) if self.accepted_share is not None else None
            ),
            "meanSeconds": round(self.duration, 2),
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cost": self.cost,
        }


def stats(store: Store, root: str | None = None) -> list[Stat]:
    """The ledger per worker, model and kind (of one project folder when ``root`` is given),
    bench tasks left out."""
    where, params = (
        (f"WHERE root = ? AND {_NOT_BENCH}", [root]) if root else (f"WHERE {_NOT_BENCH}", [])
    )
    rows = store.db.execute(
        "SELECT worker, model, kind, COUNT(*), SUM(ok), SUM(hunks_decided), "
        "SUM(hunks_accepted), AVG(duration), SUM(input_tokens), SUM(output_tokens), "
        f"SUM(cost) FROM ledger {where} GROUP BY worker, model, kind "
        "ORDER BY worker, model, kind",
        params,
    ).fetchall()
    return [
        Stat(
            r[0],
            r[1],
            r[2],
            int(r[3]),
            int(r[4] or 0),
            int(r[5] or 0),
            int(r[6] or 0),
            float(r[7] or 0),
            int(r[8] or 0),
            int(r[9] or 0),
            float(r[10]) if r[10] is not None else None,
        )
        for r in rows
    ]
