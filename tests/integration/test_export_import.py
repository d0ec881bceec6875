"""``baton export`` / ``baton import`` (issue 21, "Keeping the store"): the record of a state
home, made by real fake-agent tasks, goes to a file and into an empty home table by table;
a second import adds nothing; a cut, foreign or newer file is refused with nothing imported."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Limits, Supervisor
from baton.store import Store
from baton.store.paths import db_path
from baton.store.transfer import TABLES, TransferError, export, import_
from tests.conftest import fake_script, git, settle, user_config

EDIT_TWO = (
    {"say": "working on it"},
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
)


def tables(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every exported table, in a stable order (the owner left out: it names a
    broker of the home the rows come from)."""
    conn = sqlite3.connect(str(path))
    out = {}
    for table in TABLES:
        cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")') if r[1] != "owner"]
        names = ", ".join(f'"{c}"' for c in cols)
        out[table] = sorted(conn.execute(f'SELECT {names} FROM "{table}"').fetchall(), key=repr)
    conn.close()
    return out


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The database of a home with a decided task, a task still in review, a question, and
    project memory: made once, by a broker that has closed (the tests read copies)."""
    base = tmp_path_factory.mktemp("recorded")
    repo, home = base / "repo", base / "state"
    repo.mkdir()
    (repo / "app.py").write_text("def a():\n    return 1\n\n\ndef b():\n    return 2\n")
    (base / "gitconfig").write_text("[user]\n\tname = Test\n\temail = test@localhost\n")
    with pytest.MonkeyPatch.context() as env:  # as baton_home and the autouse fixtures
        env.setenv("BATON_HOME", str(home))
        env.setenv("BATON_CONFIG", str(user_config(base)))
        env.setenv("XDG_RUNTIME_DIR", str(base / "run"))
        env.setenv("CLAUDE_CONFIG_DIR", str(base / "claude-config"))
        env.setenv("GIT_CONFIG_GLOBAL", str(base / "gitconfig"))
        env.setenv("GIT_CONFIG_NOSYSTEM", "1")
        env.delenv("GIT_DIR", raising=False)
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", "init")
        asyncio.run(_record(home, repo))
    return db_path(home)


@pytest.fixture
def record(recorded: Path, tmp_path: Path) -> Path:
    """This test's own home, holding a copy of the recorded database."""
    home = tmp_path / "state"
    home.mkdir()
    for part in recorded.parent.glob(recorded.name + "*"):  # with its -wal, if one is left
        shutil.copy2(part, home / part.name)
    return home / recorded.name


async def _record(home: Path, repo: Path) -> None:
    sup = Supervisor(home, limits=Limits(stall_after=30, kill_grace=1.0))
    await sup.start()
    try:
        await _tasks(sup, repo)
    finally:
        await sup.close()


async def _tasks(sup: Supervisor, repo: Path) -> None:
    decided = await sup.delegate(
        DelegateRequest(instruction=fake_script(*EDIT_TWO), root=str(repo))
    )
    await settle(sup, decided.id)
    files, _ = await sup.diff(decided.id)
    first, _second = files[0].hunks
    await sup.accept(decided.id, [first.id])
    await sup.reject(decided.id)
    pending = await sup.delegate(
        DelegateRequest(instruction=fake_script(*EDIT_TWO[1:]), root=str(repo))
    )
    asked = await sup.delegate(
        DelegateRequest(instruction=fake_script({"say": "It returns 1."}), root=str(repo))
    )
    await settle(sup, pending.id)
    await settle(sup, asked.id)
    await sup.memory(str(repo), add="the tests run with pytest")
    await sup.memory(str(repo), add="keep the public API")
    with Store(db_path(sup.home)) as store, store.db.atomic():  # a bench run of one task
        store.db.execute(
            "INSERT INTO bench_runs (id, suite, root, workers, runs, cases, created_at) "
            "VALUES ('b1', 'smoke', ?, '[\"fake\"]', 1, '[]', 1.0)",
            [str(repo)],
        )
        store.db.execute(
            "INSERT INTO bench_tasks (task_id, run_id, suite, case_key, worker) "
            "VALUES (?, 'b1', 'smoke', 'c', 'fake')",
            [pending.id],
        )


def test_round_trip_into_an_empty_home_is_equal_table_by_table(
    record: Path, tmp_path: Path
) -> None:
    with Store(record) as store:
        # A task a broker of this home holds: its owner means nothing in another home.
        store.set_owner(store.list_tasks()[0].id, "12345:1700000000.000")
        written = export(store, tmp_path / "backup.jsonl")
    assert written.rows["tasks"] == 3 and written.rows["events"] > 10
    assert written.rows["hunk_states"] == 2 and written.rows["memory"] == 2
    assert written.rows["ledger"] >= 1 and written.rows["attempts"] == 3
    assert written.rows["bench_runs"] == 1 and written.rows["bench_tasks"] == 1
    assert (tmp_path / "backup.jsonl").stat().st_mode & 0o777 == 0o600
    other = tmp_path / "other" / "baton.db"
    with Store(other) as store:
        added = import_(store, tmp_path / "backup.jsonl")
    assert added.rows == written.rows and added.skipped_tasks == []
    assert tables(other) == tables(record)
    # The imported tasks are found by search as the originals (the index followed the rows).
    with Store(other) as a, Store(record) as b:
        assert [t.id for t in a.list_tasks(query="working")] == [
            t.id for t in b.list_tasks(query="working")
        ]
        assert all(owner is None for _, owner in a.tasks_with_owner())


def test_a_second_import_adds_nothing_and_names_what_it_skipped(
    record: Path, tmp_path: Path
) -> None:
    with Store(record) as store:
        export(store, tmp_path / "backup.jsonl")
    other = tmp_path / "other" / "baton.db"
    with Store(other) as store:
        import_(store, tmp_path / "backup.jsonl")
    before = tables(other)
    with Store(other) as store:
        again = import_(store, tmp_path / "backup.jsonl")
    assert sum(again.rows.values()) == 0
    assert len(again.skipped_tasks) == 3
    assert tables(other) == before


def test_since_keeps_only_the_tasks_updated_since_then(record: Path, tmp_path: Path) -> None:
    with Store(record) as store:
        tasks = sorted(store.list_tasks(), key=lambda t: t.updated_at)
        cut = tasks[-1].updated_at
        part = export(store, tmp_path / "recent.jsonl", since=cut)
    assert part.rows["tasks"] == 1
    other = tmp_path / "other" / "baton.db"
    with Store(other) as store:
        import_(store, tmp_path / "recent.jsonl")
        (only,) = store.list_tasks()
        assert only.id == tasks[-1].id
        assert len(store.events(only.id)) == len(Store(record).events(only.id))


@pytest.mark.parametrize(
    "damage, says",
    [
        (lambda lines: lines[:-1], "no end line"),
        (lambda lines: lines[:-3] + lines[-1:], "end line counts"),
        (lambda lines: ['{"format": "something else"}', *lines[1:]], "not a Baton export"),
        (lambda lines: [lines[0].replace('"version":1', '"version":9'), *lines[1:]], "version 9"),
        (lambda lines: [*lines[:2], "{not json", *lines[2:]], "not JSON"),
        (lambda lines: [*lines[:2], '{"t": "secrets", "r": []}', *lines[2:]], "known table"),
    ],
)
def test_a_damaged_file_is_refused_and_nothing_is_imported(
    record: Path, tmp_path: Path, damage: Any, says: str
) -> None:
    with Store(record) as store:
        export(store, tmp_path / "backup.jsonl")
    lines = (tmp_path / "backup.jsonl").read_text().splitlines()
    (tmp_path / "bad.jsonl").write_text("\n".join(damage(lines)) + "\n")
    other = tmp_path / "other" / "baton.db"
    with Store(other) as store, pytest.raises(TransferError, match=says):
        import_(store, tmp_path / "bad.jsonl")
    assert all(rows == [] for rows in tables(other).values())


def test_columns_this_baton_does_not_know_are_refused(record: Path, tmp_path: Path) -> None:
    with Store(record) as store:
        export(store, tmp_path / "backup.jsonl")
    lines = (tmp_path / "backup.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    header["tables"]["memory"].append("colour")
    rows = [json.loads(x) for x in lines[1:]]
    for row in rows:
        if row.get("t") == "memory":
            row["r"].append("red")
    text = "\n".join(json.dumps(x) for x in [header, *rows]) + "\n"
    (tmp_path / "newer.jsonl").write_text(text)
    with Store(tmp_path / "o.db") as store, pytest.raises(TransferError, match="colour"):
        import_(store, tmp_path / "newer.jsonl")


def test_memory_whose_number_is_taken_gets_a_new_one(record: Path, tmp_path: Path) -> None:
    with Store(record) as store:
        export(store, tmp_path / "backup.jsonl")
    other = tmp_path / "other" / "baton.db"
    with Store(other) as store:
        mine = store.add_memory("/elsewhere", "my own fact")
        import_(store, tmp_path / "backup.jsonl")
        rows = store.db.execute("SELECT id, root, text FROM memory ORDER BY id").fetchall()
    assert (mine, "/elsewhere", "my own fact") in rows
    assert len(rows) == 3 and len({r[0] for r in rows}) == 3


def test_the_commands_round_trip_through_stdout_and_stdin(record: Path, tmp_path: Path) -> None:
    env = {**os.environ, "BATON_HOME": str(record.parent)}
    run = [sys.executable, "-m", "baton.cli"]
    out = subprocess.run([*run, "export", "-"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0].startswith('{"format":"baton-export"')
    assert out.stderr.startswith("exported 3 tasks")
    empty = {**env, "BATON_HOME": str(tmp_path / "empty")}
    got = subprocess.run(
        [*run, "import", "-", "--json"], env=empty, input=out.stdout, capture_output=True,
        text=True,
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["rows"]["tasks"] == 3
    bad = subprocess.run(
        [*run, "import", str(tmp_path / "missing.jsonl")], env=empty, capture_output=True,
        text=True,
    )  # fmt: skip
    assert bad.returncode == 1 and "cannot read" in bad.stderr
    when = subprocess.run(
        [*run, "export", str(tmp_path / "x.jsonl"), "--since", "yesterday"], env=env,
        capture_output=True, text=True,
    )  # fmt: skip
    assert when.returncode == 2 and "expected a date" in when.stderr
    assert not (tmp_path / "x.jsonl").exists()
    recent = subprocess.run(
        [*run, "export", str(tmp_path / "r.jsonl"), "--since", "1h", "--json"], env=env,
        capture_output=True, text=True,
    )  # fmt: skip
    assert recent.returncode == 0 and json.loads(recent.stdout)["rows"]["tasks"] == 3
