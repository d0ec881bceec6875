"""The verbs for a task whose agent stopped, from the command line and over the websocket,
against a real broker started on demand and the real fake agent: ``baton handoff`` moves a
failed task to another worker (same id, history kept); ``baton archive`` hides settled tasks
from the lists, history kept."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from baton.surfaces.ws import protocol
from baton.surfaces.ws.blocking import connect_for
from baton.surfaces.ws.errors import BrokerError
from tests.conftest import fake_script
from tests.e2e.test_cli import as_json, baton, stop_brokers

WRITE = {"steps": [{"write": "hello.txt", "content": "hello\n"}], "summary": "wrote it"}
FAILS = {"steps": [{"error": {"kind": "worker_error", "message": "boom"}}]}


@pytest.fixture(autouse=True)
def _stop_brokers(baton_home: Path, tmp_path: Path) -> Iterator[None]:
    yield
    stop_brokers(tmp_path / "run" / "baton")


def two_fakes(repo: Path, tmp_path: Path, fa: dict[str, object]) -> None:
    """Fake accounts ``fa`` (the default, playing ``fa``) and ``fb`` (writes hello.txt) in the
    project's settings; a profile's script wins over the instruction's."""
    lines = ['default_worker = "fa"', 'only = ["fa", "fb"]']
    for name, body in (("fa", fa), ("fb", WRITE)):
        script = tmp_path / f"{name}.json"
        script.write_text(json.dumps(body))
        lines += [f"[profiles.{name}]", 'provider = "fake"', f'options = {{ script = "{script}" }}']
    (repo / ".baton.toml").write_text("\n".join(lines) + "\n")


def failed_task(repo: Path) -> str:
    run = baton("run", "--json", "--cwd", str(repo), "Create hello.txt")
    doc = as_json(run)
    assert run.returncode == 1 and doc["task"]["state"] == "failed", run.stdout + run.stderr
    return str(doc["task"]["id"])


def test_handoff_moves_a_failed_task_to_another_worker(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    two_fakes(repo, tmp_path, FAILS)
    task_id = failed_task(repo)

    ghost = baton("handoff", "--json", task_id, "--worker", "ghost")
    assert ghost.returncode == 2 and "unknown worker 'ghost'" in as_json(ghost)["error"]
    handed = baton("handoff", "--json", task_id[:6], "--worker", "fb")
    assert handed.returncode == 0, handed.stdout + handed.stderr
    doc = as_json(handed)
    assert doc["task"]["id"] == task_id and doc["task"]["state"] == "review"
    assert [f["path"] for f in doc["diff"]["files"]] == ["hello.txt"]

    info = as_json(baton("inspect", "--json", "--detail", "attempts,events,task", task_id))
    attempts = info["detail"]["attempts"]
    assert [(a["reason"], a["worker"]) for a in attempts] == [("first", "fa"), ("handoff", "fb")]
    assert info["detail"]["task"]["worker"] == "fb"
    states = [e["data"]["to"] for e in info["detail"]["events"] if e["type"] == "state"]
    assert states == [
        "queued", "preparing", "running", "failed",  # fa's turn, kept
        "queued", "preparing", "running", "review",  # fb's
    ]  # fmt: skip

    # Over the websocket: a task in review is not handed off, and the refusal says why.
    with connect_for(repo, any_broker=True) as c, pytest.raises(BrokerError) as refused:
        c.call("handoff", id=task_id)
    assert refused.value.code == protocol.WRONG_STATE
    assert "handoff is for failed" in refused.value.message
    assert refused.value.data["state"] == "review"
    again = baton("handoff", task_id)
    assert again.returncode == 2 and "handoff is for failed" in again.stderr


def test_handoff_over_the_websocket_picks_the_next_worker(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    two_fakes(repo, tmp_path, FAILS)
    task_id = failed_task(repo)
    with connect_for(repo, any_broker=True) as c:
        res = c.call("handoff", id=task_id)
        assert res["task"]["id"] == task_id and res["task"]["worker"] == "fb"
        with pytest.raises(BrokerError) as bad:
            c.call("handoff", id=task_id, worker="fb", model="x")
        assert bad.value.code == protocol.INVALID_PARAMS
    done = as_json(baton("watch", "--json", task_id, "--timeout", "60"))
    assert done["task"]["state"] == "review"


def listed(*args: str) -> list[str]:
    return [t["id"] for t in as_json(baton("tasks", "--json", *args))]


def test_archive_hides_settled_tasks_and_refuses_live_ones(baton_home: Path, repo: Path) -> None:
    edit = {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"}
    done = as_json(baton("run", "--json", "--cwd", str(repo), fake_script(edit)))["task"]["id"]
    review = baton("archive", "--json", done)
    assert review.returncode == 2 and "accept or reject its hunks first" in as_json(review)["error"]
    assert baton("accept", done).returncode == 0
    running = baton("delegate", "--cwd", str(repo), fake_script({"sleep": 60})).stdout.strip()

    # One live task among them: nothing is archived, and the message says which and why.
    both = baton("archive", "--json", done, running)
    assert both.returncode == 2, both.stdout + both.stderr
    error = as_json(both)["error"]
    assert f"task {running} is " in error and "cancel it first" in error
    assert set(listed()) == {done, running}

    archived = as_json(baton("archive", "--json", done[:6]))
    assert archived["archived"] == [done] and archived["tasks"][0]["archived"] is True
    assert listed() == [running]
    assert listed("--archived") == [done]
    assert as_json(baton("tasks", "--json", "--archived"))[0]["archived"] is True
    # Its history is whole, and says it was archived.
    info = as_json(baton("inspect", "--json", "--detail", "events,task", done))
    assert info["state"] == "applied" and info["detail"]["task"]["archived_at"] > 0
    logs = [e["data"]["message"] for e in info["detail"]["events"] if e["type"] == "log"]
    assert logs[-1] == "archived by the user"
    assert "+    return 10" in baton("diff", done).stdout

    undone = baton("archive", "--undo", done)
    assert undone.returncode == 0 and f"unarchived 1 task(s): {done}" in undone.stdout
    assert set(listed()) == {done, running} and listed("--archived") == []

    # Over the websocket; and a task that goes back to work is listed again.
    assert as_json(baton("cancel", "--json", running))["task"]["state"] == "cancelled"
    with connect_for(repo, any_broker=True) as c:
        res = c.call("archive", ids=[running])
        assert res["archived"] == [running]
        assert [t["id"] for t in c.call("tasks", archived=True)["tasks"]] == [running]
        with pytest.raises(BrokerError) as empty:
            c.call("archive", ids=[])
        assert empty.value.code == protocol.INVALID_PARAMS
    retried = baton("retry", "--json", "--detach", running)
    assert retried.returncode == 0, retried.stdout + retried.stderr
    assert running in listed() and listed("--archived") == []
    baton("cancel", running)


def test_complete_puts_a_failed_task_with_changes_up_for_review(
    baton_home: Path, repo: Path
) -> None:
    landed = fake_script(
        {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
        {"error": {"kind": "worker_error", "message": "lost the connection"}},
    )
    run = baton("run", "--json", "--cwd", str(repo), landed)
    task_id = as_json(run)["task"]["id"]
    assert run.returncode == 1 and as_json(run)["task"]["state"] == "failed"

    empty = baton("complete", task_id, "--evidence", " ")
    assert empty.returncode == 2 and "the evidence is empty" in empty.stderr
    done = baton("complete", "--json", task_id[:6], "--evidence", "pytest passes in the checkout")
    assert done.returncode == 0, done.stdout + done.stderr
    doc = as_json(done)
    assert doc["task"]["state"] == "review" and doc["files"] == ["app.py"]
    assert doc["task"]["message"] == "completed by the user: pytest passes in the checkout"

    info = as_json(baton("inspect", "--json", "--detail", "evidence,events", task_id))
    evidence = info["detail"]["evidence"]["evidence"]
    assert evidence["asserted"] == "pytest passes in the checkout"
    assert evidence["files"] == ["app.py"]
    events = info["detail"]["events"]
    logs = [e["data"]["message"] for e in events if e["type"] == "log"]
    assert "completed by the user; evidence: pytest passes in the checkout" in logs
    states = [e["data"]["to"] for e in events if e["type"] == "state"]
    assert states[-2:] == ["failed", "review"]
    assert as_json(baton("accept", "--json", task_id))["task"]["state"] == "applied"
    assert "return 10" in (repo / "app.py").read_text()

    # Over the websocket: nothing to review, and a task not stopped, are refused.
    nothing = fake_script({"error": {"kind": "worker_error", "message": "boom"}})
    bare = as_json(baton("run", "--json", "--cwd", str(repo), nothing))["task"]["id"]
    with connect_for(repo, any_broker=True) as c:
        for tid, why in ((bare, "holds no changes: nothing to review"), (task_id, "is applied")):
            with pytest.raises(BrokerError) as refused:
                c.call("complete", id=tid, evidence="it works")
            assert refused.value.code == protocol.WRONG_STATE and why in refused.value.message
        with pytest.raises(BrokerError) as missing:
            c.call("complete", id=bare)
        assert missing.value.code == protocol.INVALID_PARAMS
    assert as_json(baton("inspect", "--json", bare))["state"] == "failed"
