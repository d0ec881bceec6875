"""``baton clean`` and ``[retention]`` against a real broker started on demand, real git and
the real fake agent (issue 21, keeping the store): what settled, failed and orphaned tasks
left in the user's repository goes, old events are pruned with the ledger kept, and a
failed task past ``checkout_days`` can still be retried."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from baton.store.paths import worktrees_dir
from tests.conftest import user_config
from tests.e2e.test_cli import as_json, baton, stop_brokers

WRITE = {"steps": [{"write": "hello.txt", "content": "hello\n"}], "summary": "wrote it"}
FAILS = {"steps": [{"error": {"kind": "worker_error", "message": "boom"}}]}
DAY = 86_400


@pytest.fixture(autouse=True)
def _stop_brokers(baton_home: Path, tmp_path: Path) -> Iterator[None]:
    yield
    stop_brokers(tmp_path / "run" / "baton")


def workers(repo: Path, tmp_path: Path) -> None:
    """Fake accounts ``ok`` (writes hello.txt, the default) and ``bad`` (fails)."""
    lines = ['default_worker = "ok"', 'only = ["ok", "bad"]']
    for name, body in (("ok", WRITE), ("bad", FAILS)):
        script = tmp_path / f"{name}.json"
        script.write_text(json.dumps(body))
        lines += [f"[profiles.{name}]", 'provider = "fake"', f'options = {{ script = "{script}" }}']
    (repo / ".baton.toml").write_text("\n".join(lines) + "\n")


def run(repo: Path, *args: str, code: int = 0) -> str:
    done = baton("run", "--json", "--cwd", str(repo), *args, "Create hello.txt")
    assert done.returncode == code, done.stdout + done.stderr
    return str(as_json(done)["task"]["id"])


def baton_refs(repo: Path) -> list[str]:
    out = subprocess.run(
        ["git", "for-each-ref", "--format=%(refname)", "refs/baton", "refs/heads/baton"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sorted(out.split())


def checkouts(home: Path) -> list[str]:
    return sorted(p.name for p in worktrees_dir(home).iterdir() if not p.name.startswith("."))


def age(home: Path, task_id: str, days: float) -> None:
    """The test's clock: the task settled ``days`` earlier than it did."""
    with sqlite3.connect(home / "baton.db") as db:
        db.execute(
            "UPDATE tasks SET settled_at = settled_at - ? WHERE id = ?", (days * DAY, task_id)
        )


def count(home: Path, sql: str, *params: object) -> int:
    with sqlite3.connect(home / "baton.db") as db:
        return int(db.execute(sql, params).fetchone()[0])


def test_clean_leaves_no_baton_ref_branch_or_checkout_and_keeps_the_ledger(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    user_config(tmp_path, "[retention]\ncheckout_days = 3\nkeep_days = 5\n")
    workers(repo, tmp_path)
    accepted = run(repo)
    assert baton("accept", accepted).returncode == 0
    (repo / "hello.txt").unlink()
    rejected = run(repo)
    assert baton("reject", rejected).returncode == 0
    old_failure = run(repo, "--worker", "bad", code=1)
    new_failure = run(repo, "--worker", "bad", code=1)
    # What a broker killed at the wrong moment could leave: a checkout and refs of a task the
    # store does not know.
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    subprocess.run(
        ["git", "update-ref", "refs/baton/snapshots/orphan1", head], cwd=repo, check=True
    )
    (worktrees_dir(baton_home) / "orphan1").mkdir()
    (worktrees_dir(baton_home) / "orphan1" / "left.txt").write_text("left behind\n")
    assert checkouts(baton_home) == sorted([old_failure, new_failure, "orphan1"])
    age(baton_home, old_failure, 4)  # past checkout_days, not keep_days
    age(baton_home, accepted, 6)  # past keep_days
    events = count(baton_home, "SELECT COUNT(*) FROM events WHERE task_id = ?", accepted)
    ledger = count(baton_home, "SELECT COUNT(*) FROM ledger")
    assert events > 1 and ledger == 4

    cleaned = baton("clean", "--json")
    assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
    doc = as_json(cleaned)
    assert doc["worktrees"] == ["orphan1"]
    assert doc["expired"] == [old_failure]
    assert "refs/baton/snapshots/orphan1" in doc["refs"]
    assert doc["events"] == {"tasks": 1, "removed": events - 1}
    assert doc["checkouts_left"] is False
    assert checkouts(baton_home) == [new_failure]
    assert all(new_failure in ref for ref in baton_refs(repo)), baton_refs(repo)
    assert count(baton_home, "SELECT COUNT(*) FROM events WHERE task_id = ?", accepted) == 1
    assert count(baton_home, "SELECT COUNT(*) FROM ledger") == ledger
    said = baton("clean")
    assert said.returncode == 0 and "removed 0 checkout(s)" in said.stdout, said.stdout

    # The expired failure was told, and still retries: from a new snapshot, as a first turn.
    info = as_json(baton("inspect", "--json", "--detail", "events", old_failure))
    logs = [e["data"].get("message", "") for e in info["detail"]["events"] if e["type"] == "log"]
    assert any("removed its checkout and snapshot" in m for m in logs), logs
    assert baton("retry", old_failure).returncode in (0, 1)
    info = as_json(baton("inspect", "--json", "--detail", "attempts,task", old_failure))
    assert [a["reason"] for a in info["detail"]["attempts"]] == ["first", "first"]

    age(baton_home, new_failure, 4)
    age(baton_home, old_failure, 4)
    assert baton("clean").returncode == 0
    assert baton_refs(repo) == [] and checkouts(baton_home) == []
