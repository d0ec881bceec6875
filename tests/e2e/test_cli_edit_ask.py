"""``baton edit`` and ``baton ask`` from the command line and over the websocket, against a
real broker started on demand and the real fake agent: a queued task runs its edited
version; a started one is refused; a question is answered with no diff, its checkout
read-only in the sandbox."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from baton.process import sandbox
from baton.surfaces.ws import protocol
from baton.surfaces.ws.blocking import connect_for
from baton.surfaces.ws.errors import BrokerError
from tests.conftest import fake_script
from tests.e2e.test_cli import as_json, baton, stop_brokers

EDIT_10 = {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"}
EDIT_20 = {"edit": "app.py", "old": "    return 1\n", "new": "    return 20\n"}


@pytest.fixture(autouse=True)
def _stop_brokers(baton_home: Path, tmp_path: Path) -> Iterator[None]:
    yield
    stop_brokers(tmp_path / "run" / "baton")


def test_edit_a_queued_task_then_it_runs_the_new_version(baton_home: Path, repo: Path) -> None:
    first = baton("delegate", "--cwd", str(repo), fake_script({"sleep": 60})).stdout.strip()
    second = baton(
        "delegate", "--cwd", str(repo), "--after", first, fake_script(EDIT_10)
    ).stdout.strip()

    edited = baton("edit", "--json", second[:6], "--instruction", fake_script(EDIT_20))
    assert edited.returncode == 0, edited.stdout + edited.stderr
    doc = as_json(edited)["task"]
    assert doc["id"] == second and doc["state"] == "queued" and doc["worker"] == "fake"
    ghost = baton("edit", "--json", second, "--worker", "ghost")
    assert ghost.returncode == 2 and "unknown worker 'ghost'" in as_json(ghost)["error"]
    both = baton("edit", second, "--after", first, "--no-after")
    assert both.returncode == 2 and "exclude each other" in both.stderr
    # A task that started is refused, saying what to do.
    running = baton("edit", "--json", first, "--title", "late")
    assert running.returncode == 2, running.stdout + running.stderr
    assert "only a task that has not started" in as_json(running)["error"]

    # Over the websocket: no prerequisite any more, so it starts now.
    with connect_for(repo, any_broker=True) as c:
        with pytest.raises(BrokerError) as bad:
            c.call("edit", id=second, colour="blue")
        assert bad.value.code == protocol.INVALID_PARAMS
        res = c.call("edit", id=second, dependsOn=[], title="twenty")
        assert res["task"]["id"] == second
    done = as_json(baton("watch", "--json", second, "--timeout", "60"))
    assert done["task"]["state"] == "review", done
    assert "+    return 20" in baton("diff", second).stdout
    with connect_for(repo, any_broker=True) as c, pytest.raises(BrokerError) as late:
        c.call("edit", id=second, title="later")
    assert late.value.code == protocol.WRONG_STATE and late.value.data["state"] == "review"
    info = as_json(baton("inspect", "--json", "--detail", "events,task", second))
    assert info["detail"]["task"]["title"] == "twenty"
    logs = [e["data"]["message"] for e in info["detail"]["events"] if e["type"] == "log"]
    assert any(m.startswith("edited by the user: instruction") for m in logs), logs
    assert baton("cancel", first).returncode == 0


def test_edit_requeues_a_task_cancelled_before_it_started(baton_home: Path, repo: Path) -> None:
    first = baton("delegate", "--cwd", str(repo), fake_script({"sleep": 60})).stdout.strip()
    second = baton(
        "delegate", "--cwd", str(repo), "--after", first, fake_script(EDIT_10)
    ).stdout.strip()
    assert as_json(baton("cancel", "--json", second))["task"]["state"] == "cancelled"
    requeued = as_json(baton("edit", "--json", second, "--no-after"))
    assert requeued["task"]["state"] in ("queued", "preparing", "running"), requeued
    done = as_json(baton("watch", "--json", second, "--timeout", "60"))
    assert done["task"]["state"] == "review", done
    assert baton("cancel", first).returncode == 0


def test_ask_answers_with_no_diff(baton_home: Path, repo: Path, tmp_path: Path) -> None:
    # The question is routed by kind ask: the project's rule for it names the worker.
    script = tmp_path / "cheap.json"
    script.write_text(json.dumps({"steps": [{"read": "app.py"}], "summary": "a() returns 1."}))
    (repo / ".baton.toml").write_text(
        "[profiles.cheap]\n"
        'provider = "fake"\n'
        f'options = {{ script = "{script}" }}\n'
        "[routing.ask]\n"
        'allow = ["cheap"]\n'
    )
    asked = baton("ask", "--cwd", str(repo), "What does a() return?")
    assert asked.returncode == 0, asked.stdout + asked.stderr
    assert asked.stdout.strip() == "a() returns 1."
    doc = as_json(baton("ask", "--json", "--cwd", str(repo), "And b()?"))
    task = doc["task"]
    assert doc["answer"] == "a() returns 1." and task["state"] == "answered", doc
    assert task["worker"] == "cheap"
    info = as_json(baton("inspect", "--json", "--detail", "task", task["id"]))
    assert "diff" not in info, info  # nothing offered for review
    assert info["detail"]["task"]["kind"] == "ask"

    # Over the websocket: at once (the task), or waiting for the answer.
    with connect_for(repo, any_broker=True) as c:
        at_once = c.call("ask", question="Where is b()?", cwd=str(repo))
        assert at_once["task"]["state"] == "queued" and "answer" not in at_once
        waited = c.call("ask", question="Where is b()?", cwd=str(repo), timeout=60)
        assert waited["answer"] == "a() returns 1."
        files = c.call("diff", id=waited["task"]["id"])["files"]
        assert files == []
        with pytest.raises(BrokerError) as empty:
            c.call("ask", question=" ")
        assert empty.value.code == protocol.INVALID_PARAMS
        # An agent that writes anyway: its checkout is read-only in the sandbox; without
        # one, what it wrote is dropped. Either way nothing is offered for review.
        wrote = fake_script({"write": "scratch.txt", "content": "x\n"}, summary="wrote")
        late = c.call("ask", question=wrote, cwd=str(repo), worker="fake", timeout=60)
        if sandbox.status().works:
            assert late["task"]["state"] == "failed", late
            assert "Read-only file system" in late["task"]["message"]
        else:
            assert late["task"]["state"] == "answered", late
        assert c.call("diff", id=late["task"]["id"])["files"] == []
    assert not (repo / "scratch.txt").exists()
