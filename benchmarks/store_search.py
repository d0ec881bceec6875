"""How fast ``Store.list_tasks`` answers over 100,000 stored tasks.

Builds the tasks in one transaction (``Store.insert_tasks``), then times 50 full-text
queries (words common and rare in titles, instructions, briefs and summaries) and 50
state-filtered listings. Prints median and p99 in milliseconds, and beside the full-text
search and the state filter their floor, queried alternately with them: the same rows in a
bare table and FTS5 index (title, instruction, brief, summary) through the standard sqlite3
module, the same 100 newest matches, whole rows, fetched with one plain query.
Run: .venv/bin/python benchmarks/store_search.py [--quick]
"""

from __future__ import annotations

import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from baton.core.lifecycle import ACTIVE, SETTLED, TaskState
from baton.core.task import Task, new_task_id
from baton.store import Store, fts_query
from figures import figure

TASKS = 100_000
QUERIES = 50
TARGET_MS = 50.0

SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "sa", "do", "fu"]


def vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def build(store: Store, rng: random.Random, vocab: list[str]) -> list[Task]:
    # Zipf-like: a few words are in almost every task, most are rare.
    pool = rng.choices(vocab, [1 / (rank + 1) for rank in range(len(vocab))], k=1_000_000)

    def words(n: int) -> str:
        at = rng.randrange(len(pool) - n)
        return " ".join(pool[at : at + n])

    # Most tasks of a long-lived store are settled; a few are active.
    states = list(TaskState)
    state_weights = [40 if s in SETTLED else 1 for s in states]
    start = time.time() - TASKS
    tasks = [
        Task(
            id=new_task_id(start + i) + str(i % 10),
            instruction=words(20),
            root=f"/repo/{i % 5}",
            title=words(6),
            brief=words(60),
            summary=words(15),
            worker=f"w{i % 7}",
            state=rng.choices(states, state_weights)[0],
            created_at=start + i,
            updated_at=start + i,
        )
        for i in range(TASKS)
    ]
    store.insert_tasks(tasks)
    return tasks


def bare(path: Path, tasks: list[Task]) -> sqlite3.Connection:
    """The floor: the same rows in a bare table and FTS5 index, through sqlite3 alone."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(
        "CREATE TABLE t (id TEXT, state TEXT, created_at REAL, root TEXT, worker TEXT, "
        "title TEXT, instruction TEXT, brief TEXT, summary TEXT)"
    )
    conn.execute("CREATE INDEX t_state ON t (state, created_at)")
    conn.execute("CREATE INDEX t_created ON t (created_at)")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5 (title, instruction, brief, summary)")
    with conn:
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    x.id,
                    str(x.state),
                    x.created_at,
                    x.root,
                    x.worker,
                    x.title,
                    x.instruction,
                    x.brief,
                    x.summary,
                )
                for x in tasks
            ],
        )
        conn.executemany(
            "INSERT INTO f (rowid, title, instruction, brief, summary) VALUES (?, ?, ?, ?, ?)",
            [(i, x.title, x.instruction, x.brief, x.summary) for i, x in enumerate(tasks, 1)],
        )
    return conn


def both(
    ours: Callable[[], object], floor: Callable[[], object], n: int
) -> tuple[list[float], list[float]]:
    """``n`` timings of each, alternating which goes first."""
    a: list[float] = []
    b: list[float] = []
    for i in range(n):
        for fn, out in ((ours, a), (floor, b)) if i % 2 == 0 else ((floor, b), (ours, a)):
            t0 = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t0) * 1000)
    return a, b


def timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98]


def report(name: str, values: list[float]) -> None:
    print(f"{name}_median_ms: {statistics.median(values):.2f} (target <= {TARGET_MS:.0f})")
    print(f"{name}_p99_ms: {p99(values):.2f} (target <= {TARGET_MS:.0f})")


def main() -> None:
    global TASKS
    if "--quick" in sys.argv:
        TASKS = 5_000
    rng = random.Random(7)
    vocab = vocabulary(rng)
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "baton.db") as store:
        t0 = time.perf_counter()
        tasks = build(store, rng, vocab)
        print(f"build_tasks_seconds: {time.perf_counter() - t0:.1f} ({TASKS} tasks)")
        conn = bare(Path(tmp) / "bare.db", tasks)

        # Half the queries use common words, half rare ones; some have two words.
        common, rare = vocab[:50], vocab[50:]
        queries = [
            rng.choice(common if i % 2 else rare) + (f" {rng.choice(vocab)}" if i % 3 == 0 else "")
            for i in range(QUERIES)
        ]
        it = iter(queries)
        report("search", timed(lambda: store.list_tasks(query=next(it)), QUERIES))
        it = iter(queries)
        report(
            "search_active_in_root",
            timed(lambda: store.list_tasks(query=next(it), states=ACTIVE, root="/repo/1"), QUERIES),
        )

        state_sets = [[s] for s in TaskState] + [list(ACTIVE), list(SETTLED)]
        st = iter(state_sets * QUERIES)
        report("state_filter", timed(lambda: store.list_tasks(states=next(st)), QUERIES))
        report("count_by_state", timed(store.count_by_state, QUERIES))

        it, fl = iter(queries), iter(queries)
        search, search_floor = both(
            lambda: store.list_tasks(query=next(it)),
            lambda: conn.execute(
                "SELECT * FROM t WHERE t.rowid IN (SELECT rowid FROM f WHERE f MATCH ?) "
                "ORDER BY t.created_at DESC LIMIT 100",
                (fts_query(next(fl)),),
            ).fetchall(),
            QUERIES,
        )
        st, sf = iter(state_sets * QUERIES), iter(state_sets * QUERIES)

        def bare_states() -> object:
            states = [str(s) for s in next(sf)]
            marks = ", ".join("?" * len(states))
            sql = f"SELECT * FROM t WHERE state IN ({marks}) ORDER BY created_at DESC LIMIT 100"
            return conn.execute(sql, states).fetchall()

        listing, listing_floor = both(
            lambda: store.list_tasks(states=next(st)), bare_states, QUERIES
        )
        for name, ours, floor in (
            ("full-text search", search, search_floor),
            ("state-filtered listing", listing, listing_floor),
        ):
            for stat, value in (("median", statistics.median), ("p99", p99)):
                figure(
                    f"{name}, {TASKS} tasks",
                    value(ours),
                    value(floor),
                    "the same rows in a bare table and FTS5 index, one plain sqlite3 query",
                    runs=QUERIES,
                    stat=stat,
                )


if __name__ == "__main__":
    main()
