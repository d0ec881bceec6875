"""The Store against a real SQLite file in a temporary folder."""

from __future__ import annotations

import multiprocessing
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton.core.diff import FileDiff, FileStatus, HunkState, compute_hunks, with_states
from baton.core.events import Event, EventType
from baton.core.lifecycle import Completion, TaskState
from baton.core.task import Attempt, Target, Task, new_task_id
from baton.store import AmbiguousTask, Store, StoreError, UnknownTask, fts_query
from baton.store.migrations import MIGRATIONS


@pytest.fixture
def db_file(tmp_path: Path) -> Path:
    return tmp_path / "state" / "baton.db"


@pytest.fixture
def store(db_file: Path) -> Iterator[Store]:
    s = Store(db_file)
    yield s
    s.close()


def make_task(task_id: str | None = None, **kw: object) -> Task:
    fields: dict[str, object] = {"instruction": "do something", "root": "/repo"}
    fields.update(kw)
    return Task(id=task_id or new_task_id(), **fields)  # type: ignore[arg-type]


def ev(task_id: str, n: int) -> Event:
    return Event(EventType.TEXT, {"text": f"chunk {n}", "delta": True}, task_id=task_id)


# ------------------------------------------------------------------ opening


def test_migrations_are_recorded_by_sqlite_utils_and_idempotent(db_file: Path) -> None:
    Store(db_file).close()
    s = Store(db_file)  # a second open applies nothing new
    try:
        applied = [m.name for m in MIGRATIONS.applied(s.db)]
        assert applied == ["0001_initial", "0002_accounts", "0003_archive", "0004_bench"]
        rows = s.db.execute(
            "SELECT migration_set, name FROM _sqlite_migrations ORDER BY id"
        ).fetchall()
        assert rows == [
            ("baton", "0001_initial"),
            ("baton", "0002_accounts"),
            ("baton", "0003_archive"),
            ("baton", "0004_bench"),
        ]
        assert MIGRATIONS.pending(s.db) == []
        assert {"tasks", "attempts", "events", "diffs", "hunk_states", "memory", "brokers"} <= set(
            s.db.table_names()
        )
        assert s.db.table("tasks").detect_fts() == "tasks_fts"
    finally:
        s.close()


def _open_at(db_file: str, start: float) -> str:
    """Wait for ``start`` (a shared instant), then open the store; the error's text, if any."""
    while time.time() < start:
        pass
    try:
        Store(db_file).close()
    except StoreError as exc:
        return str(exc)
    return ""


def test_brokers_opening_a_new_database_at_once_all_open_it(tmp_path: Path) -> None:
    """Two brokers started together used to both create ``tasks``: one died on "already exists"."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(6) as pool:
        for n in range(8):
            db_file = str(tmp_path / f"s{n}" / "baton.db")
            start = time.time() + (1.5 if n == 0 else 0.3)  # the first round imports
            errors = pool.starmap(_open_at, [(db_file, start)] * 6)
            assert errors == [""] * 6, errors
            s = Store(db_file)
            try:
                assert [m.name for m in MIGRATIONS.applied(s.db)] == [
                    m.name for m in MIGRATIONS._migrations
                ]
            finally:
                s.close()


def test_connection_settings(store: Store, db_file: Path) -> None:
    def pragma(name: str) -> object:
        return store.db.execute(f"PRAGMA {name}").fetchone()[0]

    assert pragma("journal_mode") == "wal"
    assert pragma("synchronous") == 1  # NORMAL
    assert pragma("foreign_keys") == 1
    assert pragma("busy_timeout") == 5000
    assert db_file.with_name("baton.db-wal").exists()


def test_open_fails_with_store_error_on_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    bad = tmp_path / "baton.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match=r"could not open the database.*not a Baton database"):
        Store(bad)


# -------------------------------------------------------------------- tasks


def test_task_round_trip_with_every_field(store: Store) -> None:
    task = Task(
        id=new_task_id(),
        instruction="rename foo to bar",
        root="/repo",
        title="Rename foo",
        action="fix",
        kind="mechanical",
        brief="Brief: rename foo to bar everywhere.",
        targets=[Target("src/a.py", 3, 9), Target("src/b.py")],
        scope=["src/**"],
        isolation="worktree",
        worker="claude-work",
        provider="claude",
        model="sonnet",
        route_reason="mechanical edit",
        state=TaskState.REVIEW,
        completion=Completion.COMPLETED,
        message="done",
        summary="Renamed foo in two files.",
        session_id="sess-1",
        snapshot="abc123",
        base_ref="def456",
        worktree="/state/worktrees/x",
        branch="baton/x",
        attempts=2,
        resets_at=1234.5,
        group="batch-1",
        options={"verify": ["pytest", "-q"], "nested": {"a": 1, "b": [True, None]}},
        created_at=100.25,
        updated_at=200.5,
        settled_at=300.75,
    )
    store.insert_task(task)
    got = store.get_task(task.id)
    assert got == task
    assert isinstance(got.targets[0], Target)
    assert got.state is TaskState.REVIEW and got.completion is Completion.COMPLETED


def test_insert_stamps_times_and_refuses_duplicates(store: Store) -> None:
    task = make_task()
    before = time.time()
    store.insert_task(task)
    assert task.created_at >= before and task.updated_at == task.created_at
    with pytest.raises(StoreError, match="already exists"):
        store.insert_task(task)


def test_save_task_upserts_and_keeps_owner(store: Store) -> None:
    task = make_task(title="first title")
    store.save_task(task)  # insert through upsert
    store.set_owner(task.id, "broker-1")
    task.title = "second title"
    task.state = TaskState.RUNNING
    task.options = {"k": "v"}
    store.save_task(task)
    assert store.get_task(task.id) == task
    assert store.owner_of(task.id) == "broker-1"
    # the FTS index follows the update
    assert [t.id for t in store.list_tasks(query="second")] == [task.id]
    assert store.list_tasks(query="first") == []


def test_unknown_task(store: Store) -> None:
    assert store.find_task("nope") is None
    with pytest.raises(UnknownTask, match="no task 'nope'") as info:
        store.get_task("nope")
    assert isinstance(info.value, KeyError)
    with pytest.raises(UnknownTask):
        store.set_owner("nope", "b")
    with pytest.raises(UnknownTask):
        store.owner_of("nope")


def test_resolve_id(store: Store) -> None:
    for task_id in ("abcd1111xyz", "abcd2222xyz", "efgh3333xyz"):
        store.insert_task(make_task(task_id))
    assert store.resolve_id("abcd1111xyz") == "abcd1111xyz"
    assert store.resolve_id("abcd1") == "abcd1111xyz"
    assert store.resolve_id("efgh") == "efgh3333xyz"
    with pytest.raises(AmbiguousTask, match="abcd1111xyz, abcd2222xyz") as amb:
        store.resolve_id("abcd")
    assert amb.value.candidates == ["abcd1111xyz", "abcd2222xyz"]
    with pytest.raises(UnknownTask, match="at least 4"):
        store.resolve_id("efg")
    with pytest.raises(UnknownTask):
        store.resolve_id("zzzz")
    # LIKE wildcards are plain characters in a prefix
    with pytest.raises(UnknownTask):
        store.resolve_id("abc%")


def test_list_filters_and_order(store: Store) -> None:
    a = make_task("task0001", worker="w1", group="g", root="/one", created_at=10.0)
    b = make_task("task0002", worker="w2", group="g", root="/one", created_at=20.0)
    c = make_task("task0003", worker="w1", root="/two", created_at=30.0)
    a.state, b.state, c.state = TaskState.RUNNING, TaskState.REVIEW, TaskState.RUNNING
    for t in (a, b, c):
        store.insert_task(t)

    def ids(**kw: object) -> list[str]:
        return [t.id for t in store.list_tasks(**kw)]  # type: ignore[arg-type]

    assert ids() == ["task0003", "task0002", "task0001"]  # newest first
    assert ids(states=[TaskState.RUNNING]) == ["task0003", "task0001"]
    assert ids(states=["review", "running"], root="/one") == ["task0002", "task0001"]
    assert ids(states=[]) == []
    assert ids(worker="w1") == ["task0003", "task0001"]
    assert ids(group="g") == ["task0002", "task0001"]
    assert ids(root="/two") == ["task0003"]
    assert ids(since=20.0) == ["task0003", "task0002"]
    assert ids(limit=1) == ["task0003"]
    assert ids(limit=None, worker="w2", group="g", root="/one") == ["task0002"]
    assert store.count_by_state() == {"running": 2, "review": 1}
    assert store.count_by_state(root="/one") == {"running": 1, "review": 1}
    assert store.count_by_state(root="/none") == {}


# ---------------------------------------------------------------------- FTS


def test_full_text_search_over_title_instruction_brief_and_summary(store: Store) -> None:
    t1 = make_task(title="Parser cleanup", instruction="tidy the tokenizer")
    t2 = make_task(brief="Context: the websocket endpoint drops frames")
    t3 = make_task(summary="Migrated the billing module to decimals")
    for t in (t1, t2, t3):
        store.insert_task(t)

    def found(q: str) -> list[str]:
        return [t.id for t in store.list_tasks(query=q)]

    assert found("parser") == [t1.id]
    assert found("TOKENIZER") == [t1.id]
    assert found("websocket frames") == [t2.id]
    assert found("billing") == [t3.id]
    assert found("migrating") == [t3.id]  # porter stemming
    assert found("parser billing") == []  # every word must appear
    assert found('"parser') == [t1.id]


def found(store: Store, q: str, **kw: object) -> list[str]:
    return [t.id for t in store.list_tasks(query=q, **kw)]  # type: ignore[arg-type]


def test_search_combines_with_filters(store: Store) -> None:
    t1 = make_task(title="flaky test", worker="w1")
    t2 = make_task(title="flaky build", worker="w2")
    store.insert_task(t1)
    store.insert_task(t2)
    assert set(found(store, "flaky")) == {t1.id, t2.id}
    assert found(store, "flaky", worker="w2") == [t2.id]
    assert found(store, "flaky", states=["review"]) == []


@pytest.mark.parametrize(
    "query",
    ['foo-bar "x', '"', '""', "AND", "a OR", "NEAR(", "title:x", "*", "^x", "-", "a\0b", "(", "'"],
)
def test_hostile_queries_never_raise(store: Store, query: str) -> None:
    store.insert_task(make_task(title="foo bar x"))
    store.list_tasks(query=query)


def test_hostile_query_terms_still_match_their_words(store: Store) -> None:
    t = make_task(title="foo bar x and more")
    store.insert_task(t)
    assert found(store, 'foo-bar "x') == [t.id]
    # operators are plain words that must appear: "and" does, "or" and "zzz" do not
    assert found(store, "foo AND") == [t.id]
    assert found(store, "foo OR zzz") == []
    assert found(store, "NOT zzz") == []
    assert fts_query('foo-bar "x') == '"foo-bar" """x"'
    assert fts_query("- * ( )") == ""


def test_arbitrary_text_queries_never_raise(store: Store) -> None:
    store.insert_task(make_task(title="alpha beta", brief="gamma delta"))

    @settings(max_examples=300, deadline=None)
    @given(st.text())
    def check(q: str) -> None:
        result = store.list_tasks(query=q)
        assert len(result) <= 1

    check()


# ------------------------------------------------------------------- events


def test_seq_is_contiguous_across_batches_tasks_and_reopening(db_file: Path) -> None:
    s = Store(db_file)
    a, b = make_task(), make_task()
    s.insert_task(a)
    s.insert_task(b)
    out = s.append_events([ev(a.id, 0), ev(b.id, 0), ev(a.id, 1)])
    assert [(e.task_id, e.seq) for e in out] == [(a.id, 1), (b.id, 1), (a.id, 2)]
    out = s.append_events([ev(b.id, 1), ev(a.id, 2), ev(b.id, 2)])
    assert [(e.task_id, e.seq) for e in out] == [(b.id, 2), (a.id, 3), (b.id, 3)]
    s.close()

    s = Store(db_file)  # a new process: the seq cache starts empty
    try:
        assert s.last_seq(a.id) == 3 and s.last_seq(b.id) == 3
        out = s.append_events([ev(a.id, 3)] + [ev(b.id, n) for n in range(3, 300)])
        assert out[0].seq == 4
        assert [e.seq for e in out[1:]] == list(range(4, 301))
        assert [e.seq for e in s.events(a.id)] == [1, 2, 3, 4]
        assert [e.seq for e in s.events(b.id)] == list(range(1, 301))
        assert [e.data["text"] for e in s.events(a.id)] == [f"chunk {n}" for n in range(4)]
    finally:
        s.close()


def test_events_are_stamped_and_read_back(store: Store) -> None:
    t = make_task()
    store.insert_task(t)
    before = time.time()
    given_ts = Event(EventType.STATE, {"from": "queued", "to": "preparing"}, t.id, ts=5.0)
    out = store.append_events([given_ts, ev(t.id, 9)])
    assert out[0].ts == 5.0 and out[1].ts >= before
    assert store.events(t.id) == out
    assert store.events(t.id, after_seq=1) == out[1:]
    assert store.events(t.id, limit=1) == out[:1]
    assert store.events(t.id, after_seq=2) == []
    assert store.append_events([]) == []
    assert store.last_seq("no-such-task") == 0


def test_event_data_and_attempt_round_trip(store: Store) -> None:
    t = make_task()
    store.insert_task(t)
    e = Event(
        EventType.TOOL,
        {"name": "edit", "input": "ünïcode ✓", "files": ["a.py"], "n": 1.5, "none": None},
        task_id=t.id,
        attempt=2,
    )
    [stored] = store.append_events([e])
    [read] = store.events(t.id)
    assert read == stored and read.attempt == 2 and read.type is EventType.TOOL


def test_a_batch_with_an_unknown_task_stores_nothing(store: Store) -> None:
    t = make_task()
    store.insert_task(t)
    with pytest.raises(UnknownTask):
        store.append_events([ev(t.id, 0), ev("missing", 0)])
    assert store.events(t.id) == []
    assert store.append_events([ev(t.id, 0)])[0].seq == 1


def test_events_are_append_only(store: Store) -> None:
    t = make_task()
    store.insert_task(t)
    store.append_events([ev(t.id, 0)])
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        store.db.execute("UPDATE events SET type = 'log'")


# ---------------------------------------------------------------- attempts


def test_attempts_round_trip_and_upsert(store: Store) -> None:
    t = make_task()
    store.insert_task(t)
    first = Attempt(task_id=t.id, n=1, worker="w", provider="claude", pid=42, started_at=1.0)
    second = Attempt(task_id=t.id, n=2, reason="retry", transport="acp")
    store.save_attempt(second)
    store.save_attempt(first)
    first.exit_code, first.completion, first.out_offset = 0, Completion.COMPLETED, 1234
    store.save_attempt(first)
    assert store.attempts(t.id) == [first, second]
    with pytest.raises(UnknownTask):
        store.save_attempt(Attempt(task_id="missing", n=1))


# ------------------------------------------------------------- diff, hunks


def test_diff_and_hunk_states_round_trip(store: Store) -> None:
    t = make_task()
    store.insert_task(t)
    assert store.load_diff(t.id) is None
    hunks = compute_hunks("a.py", "one\ntwo\nthree\n", "one\r\nTWO\nthree\nfour\n")
    files = [
        FileDiff("a.py", FileStatus.MODIFIED, hunks, added=3, removed=2),
        FileDiff("new.py", FileStatus.RENAMED, (), old_path="old.py"),
    ]
    store.save_diff(t.id, files, final=False)
    assert store.load_diff(t.id) == (files, False)
    store.save_diff(t.id, files[:1], final=True)
    assert store.load_diff(t.id) == (files[:1], True)

    assert store.hunk_states(t.id) == {}
    store.set_hunk_states(t.id, {hunks[0].id: HunkState.ACCEPTED})
    store.set_hunk_states(t.id, {hunks[0].id: HunkState.REJECTED, hunks[1].id: "accepted"})  # type: ignore[dict-item]
    decided = store.hunk_states(t.id)
    assert decided == {hunks[0].id: HunkState.REJECTED, hunks[1].id: HunkState.ACCEPTED}
    loaded = store.load_diff(t.id)
    assert loaded is not None
    merged = with_states(loaded[0], decided)
    assert [h.state for h in merged[0].hunks] == [HunkState.REJECTED, HunkState.ACCEPTED]
    with pytest.raises(UnknownTask):
        store.save_diff("missing", files, final=True)
    with pytest.raises(UnknownTask):
        store.set_hunk_states("missing", {"h": HunkState.ACCEPTED})


# ------------------------------------------------------------------ memory


def test_memory(store: Store) -> None:
    a = store.add_memory("/one", "tests run with `make check`")
    b = store.add_memory("/one", "never touch vendor/")
    store.add_memory("/two", "other project")
    assert store.list_memory("/one") == [
        (a, "tests run with `make check`"),
        (b, "never touch vendor/"),
    ]
    assert store.remove_memory(a) is True
    assert store.remove_memory(a) is False
    assert store.list_memory("/one") == [(b, "never touch vendor/")]
    assert store.list_memory("/none") == []


# ----------------------------------------------------------------- brokers


def test_brokers_heartbeats_and_orphans(store: Store) -> None:
    store.register_broker("101@host", 101)
    store.register_broker("202@host", 202, host="elsewhere")
    assert [b.id for b in store.live_brokers(60)] == ["101@host", "202@host"]
    store.db.execute("UPDATE brokers SET heartbeat = heartbeat - 100 WHERE id = '202@host'")
    assert [b.id for b in store.live_brokers(60)] == ["101@host"]
    store.heartbeat("202@host")
    live = {b.id: b for b in store.live_brokers(60)}
    assert live["202@host"].pid == 202 and live["202@host"].host == "elsewhere"

    owned = make_task(state=TaskState.RUNNING, created_at=1.0)
    stale = make_task(state=TaskState.RUNNING, created_at=2.0)
    unowned = make_task(state=TaskState.QUEUED, created_at=3.0)
    done = make_task(state=TaskState.APPLIED, created_at=4.0)
    for t in (owned, stale, unowned, done):
        store.insert_task(t)
    store.set_owner(owned.id, "101@host")
    store.set_owner(stale.id, "303@gone")
    store.set_owner(done.id, "303@gone")
    assert [t.id for t in store.orphaned_tasks(60)] == [stale.id, unowned.id]
    store.unregister_broker("101@host")
    assert [t.id for t in store.orphaned_tasks(60)] == [owned.id, stale.id, unowned.id]
    store.set_owner(stale.id, None)
    assert store.owner_of(stale.id) is None


# --------------------------------------------------------------- full disk


def test_full_disk_raises_store_error_and_reads_still_work(store: Store) -> None:
    t = make_task(title="kept")
    store.insert_task(t)
    store.append_events([ev(t.id, 0)])
    pages = store.db.execute("PRAGMA page_count").fetchone()[0]
    store.db.execute(f"PRAGMA max_page_count = {pages}")
    big = [Event(EventType.TEXT, {"text": "x" * 4000}, task_id=t.id) for _ in range(50)]
    with pytest.raises(StoreError, match=r"full.*database or disk is full") as info:
        store.append_events(big)
    assert "could not append 50 events in" in str(info.value)
    assert str(store.path) in str(info.value)
    # nothing of the failed batch is stored, and the store still reads and counts right
    assert [e.seq for e in store.events(t.id)] == [1]
    assert store.get_task(t.id).title == "kept"
    assert [x.id for x in store.list_tasks(query="kept")] == [t.id]
    # once there is room again, seq continues without a gap
    store.db.execute("PRAGMA max_page_count = 1073741823")
    assert store.append_events([ev(t.id, 1)])[0].seq == 2


def test_two_stores_on_one_file_keep_seq_contiguous(db_file: Path) -> None:
    first, second = Store(db_file), Store(db_file)
    try:
        t = make_task()
        first.insert_task(t)
        assert [e.seq for e in first.append_events([ev(t.id, 0), ev(t.id, 1)])] == [1, 2]
        assert [e.seq for e in second.append_events([ev(t.id, 2)])] == [3]
        # first's cached last seq (2) is stale: the batch is renumbered, not lost
        assert [e.seq for e in first.append_events([ev(t.id, 3), ev(t.id, 4)])] == [4, 5]
        assert [e.data["text"] for e in second.events(t.id)] == [f"chunk {n}" for n in range(5)]
    finally:
        first.close()
        second.close()


def test_insert_tasks_is_one_transaction(store: Store) -> None:
    a, b = make_task(), make_task()
    assert store.insert_tasks([a, b]) == 2
    with pytest.raises(StoreError, match="exists"):
        store.insert_tasks([make_task("fresh-one"), make_task(a.id)])
    assert store.find_task("fresh-one") is None
    assert {t.id for t in store.list_tasks()} == {a.id, b.id}


WORDS = ["alpha", "beta", "gamma", "delta"]
task_specs = st.lists(
    st.tuples(
        st.sampled_from([TaskState.RUNNING, TaskState.REVIEW, TaskState.APPLIED]),
        st.sampled_from(["w1", "w2"]),
        st.sampled_from([None, "g1"]),
        st.sampled_from(["/one", "/two"]),
        st.integers(0, 5),  # created_at: ties are ordered by id
        st.sampled_from(WORDS),
    ),
    max_size=25,
)
filter_specs = st.fixed_dictionaries(
    {},
    optional={
        "states": st.lists(st.sampled_from(["running", "review", "applied", "failed"])),
        "worker": st.sampled_from(["w1", "w2", "w3"]),
        "group": st.sampled_from(["g1", "g2"]),
        "root": st.sampled_from(["/one", "/two"]),
        "since": st.integers(0, 6).map(float),
        "query": st.sampled_from([*WORDS, "alpha beta", "zeta"]),
        "limit": st.integers(1, 30),
    },
)


def test_list_tasks_agrees_with_a_plain_python_filter(tmp_path: Path) -> None:
    """Whatever index list_tasks walks, it returns the right tasks in the right order."""
    counter = iter(range(10**9))

    @settings(max_examples=60, deadline=None)
    @given(task_specs, filter_specs)
    def check(specs: list[tuple[TaskState, str, str | None, str, int, str]], kw: dict) -> None:  # type: ignore[type-arg]
        with Store(tmp_path / f"{next(counter)}.db") as store:
            tasks = [
                make_task(
                    f"t{i:03d}",
                    state=s,
                    worker=w,
                    group=g,
                    root=r,
                    created_at=float(c),
                    title=f"{word} task",
                )
                for i, (s, w, g, r, c, word) in enumerate(specs)
            ]
            store.insert_tasks(tasks)
            expected = [
                t
                for t in tasks
                if ("states" not in kw or str(t.state) in kw["states"])
                and ("worker" not in kw or t.worker == kw["worker"])
                and ("group" not in kw or t.group == kw["group"])
                and ("root" not in kw or t.root == kw["root"])
                and ("since" not in kw or t.created_at >= kw["since"])
                and ("query" not in kw or all(w in t.title.split() for w in kw["query"].split()))
            ]
            expected.sort(key=lambda t: (t.created_at, t.id), reverse=True)
            expected = expected[: kw.get("limit", 100)]
            assert [t.id for t in store.list_tasks(**kw)] == [t.id for t in expected]

    check()


def test_offsets_are_stored_with_their_events(store: Store) -> None:
    t = make_task()
    store.insert_task(t)
    store.save_attempt(Attempt(task_id=t.id, n=1))
    store.append_events([ev(t.id, 0)], offsets=[(t.id, 1, 120), (t.id, 9, 5)])
    assert store.attempts(t.id)[0].out_offset == 120
    store.append_events([], offsets=[(t.id, 1, 200)])
    assert store.attempts(t.id)[0].out_offset == 200
    with pytest.raises(UnknownTask):  # the batch fails: the offset does not move either
        store.append_events([ev(t.id, 1), ev("missing", 0)], offsets=[(t.id, 1, 999)])
    assert store.attempts(t.id)[0].out_offset == 200
    assert store.last_seq(t.id) == 1


def test_one_offset_per_line_is_one_update_to_the_last(store: Store) -> None:
    t = make_task()
    store.insert_task(t)
    store.save_attempt(Attempt(task_id=t.id, n=1))
    store.save_attempt(Attempt(task_id=t.id, n=2))
    updates: list[str] = []
    store._conn.set_trace_callback(lambda sql: updates.append(sql) if "UPDATE" in sql else None)
    offsets = [(t.id, 1, 10 * k) for k in range(1, 51)] + [(t.id, 2, 7)]
    store.append_events([ev(t.id, k) for k in range(50)], offsets=offsets)
    store._conn.set_trace_callback(None)
    assert [a.out_offset for a in store.attempts(t.id)] == [500, 7]
    assert len(updates) == 2  # one per attempt, not one per line


def test_owner_through_insert_and_save(store: Store) -> None:
    a = make_task(state=TaskState.RUNNING, created_at=1.0)
    b = make_task(state=TaskState.REVIEW, created_at=2.0)
    store.insert_task(a, owner="b1")
    store.insert_task(b)
    assert store.task_with_owner(a.id) == (a, "b1")
    store.save_task(a)  # owner kept
    assert store.owner_of(a.id) == "b1"
    store.save_task(a, owner=None)
    assert store.owner_of(a.id) is None
    store.save_task(b, owner="b2")
    assert store.tasks_with_owner() == [(a, None), (b, "b2")]
    assert store.tasks_with_owner(states=["review"]) == [(b, "b2")]
    assert store.tasks_with_owner(states=[]) == []
    with pytest.raises(UnknownTask):
        store.task_with_owner("missing")
