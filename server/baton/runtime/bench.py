"""Running a bench (``baton bench``): every case of a suite on every worker, judged by checks.

:meth:`Bench.start` records the run (``bench_runs``) and delegates one ordinary task per
case, worker and repeat, each with the case's checks as its ``verify`` step (or the
project's, when the case names none), the suite's repair rounds and no reviewer, and notes
which case, worker and repeat it is (``bench_tasks``); the broker queues them under each
profile's concurrency. Nothing a bench task does reaches the user's files: once it is in
review it is rejected, a question it asks stops it (counted as failed), and once settled
it is archived. Every broker does that for the bench tasks it owns (its listener, and a
sweep when it starts), so a bench whose broker died is finished by the one that adopts its
tasks. :func:`results` judges a run's tasks (:func:`baton.core.bench.verdict`) from what
they recorded; :func:`bench_stats` sums every run, per suite and worker, for ``baton stats``.
A task is counted once, by its id, however often a run is read.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from baton.config.layers import ConfigError
from baton.config.watch import SettingsCache
from baton.core import bench as judged
from baton.core.bench import Suite
from baton.core.events import Event, EventType
from baton.core.lifecycle import SETTLED, TaskState
from baton.core.task import Target, Task, new_task_id
from baton.errors import BatonError, InvalidInput, NotFound
from baton.runtime.book import Book
from baton.runtime.requests import DelegateRequest
from baton.store import AsyncStore, Store

log = logging.getLogger(__name__)
S = TaskState
_SETTLED = frozenset(str(s) for s in SETTLED)


@dataclass(frozen=True, slots=True)
class Started:
    """A bench run as :meth:`Bench.start` answers it: its id and ``(task, case, worker, n)``."""

    run: str
    tasks: list[tuple[Task, str, str, int]]


class Bench:
    """The bench runs of one broker: starting them, and finishing the bench tasks it owns."""

    def __init__(
        self,
        store: AsyncStore,
        book: Book,
        settings: SettingsCache,
        spawn: Callable[[Coroutine[Any, Any, Any], str], object],
        delegate: Callable[[DelegateRequest], Awaitable[Task]],
        cancel: Callable[[str], Awaitable[Task]],
        reject: Callable[[str], Awaitable[list[str]]],
        workers: Callable[[str], Collection[str]],
    ) -> None:
        self.store = store
        self.book = book
        self.settings = settings
        self.spawn = spawn
        self.delegate = delegate
        self.cancel = cancel
        self.reject = reject
        self.workers = workers  # the workers a task in that root may name
        self._finishing: set[str] = set()

    async def start(
        self,
        suite: Suite,
        workers: Sequence[str],
        root: str,
        *,
        runs: int = 1,
        path: str | None = None,
    ) -> Started:
        """Record the run and delegate every case on every worker ``runs`` times."""
        if not workers:
            raise InvalidInput("workers: name one or more workers")
        known = self.workers(root)
        unknown = [w for w in workers if w not in known]
        if unknown:
            raise InvalidInput(
                f"unknown worker {unknown[0]!r}; configured workers: {', '.join(sorted(known))}"
            )
        if not 1 <= runs <= judged.MAX_RUNS:
            raise InvalidInput(f"runs: from 1 to {judged.MAX_RUNS}")
        unchecked = [c.key for c in suite.cases if not c.checks]
        if unchecked and not self._project_checks(root):
            raise InvalidInput(
                f"case {unchecked[0]} has no checks and the project has no verify step: "
                "give the case checks = [[…argv…]]"
            )
        run = "b" + new_task_id()
        record = {
            "id": run,
            "suite": suite.name,
            "path": path,
            "root": root,
            "workers": json.dumps(list(workers)),
            "runs": runs,
            "cases": json.dumps([c.to_json() for c in suite.cases]),
            "created_at": time.time(),
        }
        await self.store.call(_insert, "bench_runs", [record])
        started: list[tuple[Task, str, str, int]] = []
        for n in range(1, runs + 1):
            for case in suite.cases:
                for worker in workers:
                    req = _request(suite, case, worker, root, run, n)
                    try:
                        task = await self.delegate(req)
                    except BatonError as exc:  # routing refused it: the run does not start
                        await self._undo([t for t, *_ in started])
                        raise InvalidInput(
                            f"case {case.key} on {worker}: {exc} (the run's {len(started)} "
                            "task(s) already delegated were cancelled)"
                        ) from None
                    row: dict[str, Any] = {"task_id": task.id, "run_id": run}
                    row |= {"suite": suite.name, "case_key": case.key, "worker": worker, "n": n}
                    await self.store.call(_insert, "bench_tasks", [row])
                    started.append((task, case.key, worker, n))
        return Started(run, started)

    async def _undo(self, tasks: Sequence[Task]) -> None:
        for task in tasks:
            try:
                await self.cancel(task.id)
            except BatonError as exc:
                log.info("bench: could not cancel %s: %s", task.id, exc)

    def _project_checks(self, root: str) -> bool:
        try:
            return bool(self.settings.get(root).verify)
        except ConfigError as exc:
            raise InvalidInput(f"Baton's settings: {exc}") from None

    async def results(self, run: str) -> dict[str, Any]:
        """The run as it stands: its record, each task judged, and a line per worker."""
        found = await self.store.call(_run_rows, run)
        if found is None:
            raise NotFound(f"no bench run {run!r}")
        record, rows = found
        workers = json.loads(record["workers"])
        tasks = [_judged(r) for r in rows]
        lines = judged.summarize((t[1] for t in tasks), workers)
        return {
            "run": run,
            "suite": record["suite"],
            "path": record["path"],
            "root": record["root"],
            "workers": workers,
            "runs": record["runs"],
            "createdAt": record["created_at"],
            "done": all(t[1].verdict.done for t in tasks),
            "tasks": [t[0] for t in tasks],
            "table": [line.to_json() for line in lines],
        }

    async def stop(self, run: str) -> list[str]:
        """Cancel the run's tasks that still run (Ctrl-C on ``baton bench``): the ids
        cancelled. They are not counted: a stopped run says nothing of its worker."""
        found = await self.store.call(_run_rows, run)
        if found is None:
            raise NotFound(f"no bench run {run!r}")
        stopped = []
        for row in found[1]:
            if row["state"] in _SETTLED or row["state"] == str(S.REVIEW):
                continue
            try:
                await self.cancel(row["task_id"])
                stopped.append(str(row["task_id"]))
            except Exception as exc:  # settled meanwhile, or another broker's
                log.info("bench %s: could not cancel %s: %s", run, row["task_id"], exc)
        return stopped

    # ------------------------------------------------------------ finishing bench tasks

    def on_event(self, event: Event) -> None:
        """A listener of committed events: a bench task that stops is finished."""
        if event.type != EventType.STATE:
            return
        to = str(event.data.get("to"))
        if to in _SETTLED or to in (S.REVIEW, S.NEEDS_INPUT):
            self.spawn(self.finish(event.task_id), f"bench finish {event.task_id}")

    async def sweep(self) -> None:
        """Finish the bench tasks a broker that died left in review, asking or unarchived."""
        try:
            ids = await self.store.call(_unfinished)
        except Exception as exc:
            log.warning("bench: could not read the bench tasks to finish: %s", exc)
            return
        for task_id in ids:
            await self.finish(task_id)

    async def finish(self, task_id: str) -> None:
        """Reject a bench task in review, stop one that asks, archive one settled. Safe to
        call again: each step looks at the task as it is, and the next follows."""
        if task_id in self._finishing:
            return
        self._finishing.add(task_id)
        try:
            for _ in range(3):  # review → rejected → archived at most
                task = await self.book.get(task_id)
                # What the task records, not bench_tasks: a task fast enough to stop before
                # its row is written is finished too.
                if not isinstance(task.options.get("bench"), dict) or not await self._step(task):
                    return
        except Exception as exc:  # another broker owns it, or it moved on: that one finishes
            log.info("bench: task %s not finished here: %s", task_id, exc)
        finally:
            self._finishing.discard(task_id)

    async def _step(self, task: Task) -> bool:
        """One step of finishing ``task``; whether another may follow."""
        if task.state == S.REVIEW:
            await self.reject(task.id)
            return True
        if task.state == S.NEEDS_INPUT:
            note = f"the worker asked a question, which a bench does not answer: {task.message}"
            await self.store.call(_note, task.id, note[:500])
            await self.cancel(task.id)
            return True
        if task.state in SETTLED and task.archived_at is None:
            await self.store.call(Store.set_archived, [task.id], time.time(), list(SETTLED))
            await self.book.log(task, "archived by the bench (baton tasks --archived)")
        return False


def _request(
    suite: Suite, case: judged.Case, worker: str, root: str, run: str, n: int
) -> DelegateRequest:
    options: dict[str, Any] = {
        "bench": {"run": run, "suite": suite.name, "case": case.key, "n": n},
        "repair_rounds": suite.repair_rounds,
        "review": None,  # the checks judge, not a reviewer
    }
    if case.checks:
        options["verify"] = [dict(c) for c in case.checks]
    title = f"bench {suite.name}/{case.key}: {case.title or case.instruction.splitlines()[0]}"
    return DelegateRequest(
        instruction=case.instruction,
        root=root,
        targets=[Target(p, s, e) for p, s, e in case.files],
        scope=list(case.scope),
        worker=worker,
        title=title[:200],
        options=options,
    )


# ------------------------------------------------------------------------- the store side


def _insert(store: Store, table: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    names = list(rows[0])
    sql = f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})"
    with store.db.atomic():
        for row in rows:
            store.db.execute(sql, [row[n] for n in names])


def _note(store: Store, task_id: str, note: str) -> None:
    with store.db.atomic():
        store.db.execute("UPDATE bench_tasks SET note = ? WHERE task_id = ?", [note, task_id])


def _unfinished(store: Store) -> list[str]:
    rows = store.db.execute(
        "SELECT t.id FROM bench_tasks b JOIN tasks t ON t.id = b.task_id "
        "WHERE t.state IN ('review', 'needs_input') OR "
        f"(t.archived_at IS NULL AND t.state IN ({', '.join('?' for _ in _SETTLED)}))",
        sorted(_SETTLED),
    ).fetchall()
    return [str(r[0]) for r in rows]


_TASK_ROWS = (
    "SELECT b.task_id, b.run_id, b.suite, b.case_key, b.worker, b.n, b.note, t.state, "
    "t.message, t.options, l.duration, l.input_tokens, l.output_tokens, l.cost "
    "FROM bench_tasks b JOIN tasks t ON t.id = b.task_id "
    "LEFT JOIN ledger l ON l.task_id = b.task_id"
)
_TASK_COLUMNS = (
    "task_id", "run_id", "suite", "case", "worker", "n", "note", "state", "message",
    "options", "duration", "input_tokens", "output_tokens", "cost",
)  # fmt: skip


def _run_rows(store: Store, run: str) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    cur = store.db.execute("SELECT * FROM bench_runs WHERE id = ?", [run])
    found = cur.fetchone()
    if found is None:
        return None
    record = dict(zip([d[0] for d in cur.description], found, strict=True))
    rows = store.db.execute(
        f"{_TASK_ROWS} WHERE b.run_id = ? ORDER BY b.n, b.rowid", [run]
    ).fetchall()
    return record, [dict(zip(_TASK_COLUMNS, r, strict=True)) for r in rows]


def _judged(row: dict[str, Any]) -> tuple[dict[str, Any], judged.Run]:
    """A bench task's row as an answer's entry, and as a run to sum."""
    try:
        options = json.loads(row["options"] or "{}")
    except ValueError:
        options = {}
    evidence = options.get("evidence") if isinstance(options, dict) else None
    v = judged.verdict(row["state"], row["message"] or "", evidence, row["note"] or "")
    tokens = int(row["input_tokens"] or 0) + int(row["output_tokens"] or 0)
    run = judged.Run(
        worker=row["worker"],
        case=row["case"],
        verdict=v,
        seconds=float(row["duration"] or 0.0),
        tokens=tokens,
        cost=float(row["cost"]) if row["cost"] is not None else None,
    )
    entry = {
        "id": row["task_id"],
        "case": row["case"],
        "worker": row["worker"],
        "n": row["n"],
        "state": row["state"],
        "passed": v.passed,
        "reason": v.reason,
        "seconds": round(run.seconds, 3),
        "tokens": tokens,
        "cost": run.cost,
    }
    return entry, run


def bench_stats(store: Store, root: str | None = None) -> list[dict[str, Any]]:
    """Every bench run summed per suite and worker (of one project folder when ``root``):
    ``{suite, worker, benches, run, passed, rate, medianSeconds, tokens, cost}``."""
    where, params = ("WHERE r.root = ?", [root]) if root else ("", [])
    rows = store.db.execute(
        f"{_TASK_ROWS} JOIN bench_runs r ON r.id = b.run_id {where} ORDER BY b.suite, b.worker",
        params,
    ).fetchall()
    by_suite: dict[str, list[tuple[str, judged.Run]]] = {}
    for r in rows:
        row = dict(zip(_TASK_COLUMNS, r, strict=True))
        by_suite.setdefault(row["suite"], []).append((row["run_id"], _judged(row)[1]))
    out = []
    for suite, runs in sorted(by_suite.items()):
        for line in judged.summarize(r for _, r in runs):
            benches = {
                b for b, r in runs if r.worker == line.worker and r.verdict.passed is not None
            }
            out.append({"suite": suite, "benches": len(benches), **line.to_json()})
    return out
