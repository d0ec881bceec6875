"""The task verbs through ``baton mcp``: the ``task`` tool's actions (handoff, complete,
edit, archive, unarchive), ``ask`` and ``delegate``'s ``effort``, against a broker started on
demand and the real fake agent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import fake_script
from tests.e2e.test_cli import as_json, baton, stop_brokers
from tests.e2e.test_cli_verbs import FAILS, two_fakes
from tests.e2e.test_mcp_bridge import McpProcess, initialize

EDIT_10 = {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"}


@pytest.fixture
def mcp(baton_home: Path, repo: Path, tmp_path: Path) -> Iterator[McpProcess]:
    proc = McpProcess(repo)
    initialize(proc)
    try:
        yield proc
    finally:
        proc.close()
        stop_brokers(tmp_path / "run" / "baton")


def line(mcp: McpProcess, tool: str, **arguments: object) -> dict[str, object]:
    text, error = mcp.tool(tool, **arguments)
    assert not error, text
    answer: dict[str, object] = json.loads(text)
    return answer


def test_handoff_archive_and_unarchive(mcp: McpProcess, repo: Path, tmp_path: Path) -> None:
    two_fakes(repo, tmp_path, FAILS)
    tid = str(line(mcp, "delegate", instruction="Create hello.txt")["id"])
    assert line(mcp, "watch", ids=[tid], timeout=60)["state"] == "failed"

    text, error = mcp.tool("task", id=tid, action="archive", worker="fb")
    assert error and "takes no worker" in text
    handed = line(mcp, "task", id=tid, action="handoff", worker="fb")
    assert handed["id"] == tid and handed["state"] == "queued"
    assert line(mcp, "watch", ids=[tid], timeout=60)["state"] == "review"
    text, error = mcp.tool("task", id=tid, action="handoff")
    assert error and "handoff is for failed" in text and "next: diff, accept" in text

    assert line(mcp, "accept", id=tid)["task"] == {
        "id": tid,
        "state": "applied",
        "next": ["inspect"],
    }
    archived = line(mcp, "task", id=tid, action="archive")
    assert archived["archived"] == [tid]
    assert json.loads(mcp.tool("tasks")[0]) == []
    assert line(mcp, "task", id=tid, action="unarchive")["unarchived"] == [tid]
    assert [t["id"] for t in json.loads(mcp.tool("tasks")[0])] == [tid]


def test_complete_a_failed_task_whose_checkout_holds_the_work(mcp: McpProcess) -> None:
    script = fake_script(EDIT_10, {"error": {"kind": "worker_error", "message": "lost"}})
    tid = str(line(mcp, "delegate", instruction=script)["id"])
    assert line(mcp, "watch", ids=[tid], timeout=60)["state"] == "failed"
    text, error = mcp.tool("task", id=tid, action="complete")
    assert error and "needs text: why the work is done" in text
    done = line(mcp, "task", id=tid, action="complete", text="tests pass locally")
    assert done["task"]["state"] == "review" and done["files"] == ["app.py"]  # type: ignore[index]
    evidence = line(mcp, "inspect", id=tid, detail="evidence")["detail"]
    assert "tests pass locally" in json.dumps(evidence)


def test_edit_a_queued_task(mcp: McpProcess, repo: Path) -> None:
    first = str(line(mcp, "delegate", instruction=fake_script({"sleep": 3}))["id"])
    second = baton(
        "delegate", "--cwd", str(repo), "--after", first, fake_script({"say": "old"})
    ).stdout.strip()
    edited = line(mcp, "task", id=second, action="edit", text=fake_script(EDIT_10))
    assert edited["id"] == second and edited["state"] == "queued"
    text, error = mcp.tool("task", id=first, action="edit", text="too late")
    assert error and "only a task that has not started" in text
    assert line(mcp, "watch", ids=[second], timeout=60)["state"] == "review"
    assert "+    return 10" in mcp.tool("diff", id=second)[0]


def test_ask_answers_and_effort_is_noted(mcp: McpProcess, repo: Path) -> None:
    asked = line(mcp, "ask", question=fake_script({"read": "app.py"}, summary="It is 1."))
    assert asked["answer"] == "It is 1." and asked["task"]["state"] == "answered"  # type: ignore[index]

    tid = str(line(mcp, "delegate", instruction=fake_script(), effort="high")["id"])
    line(mcp, "watch", ids=[tid], timeout=60)
    info = as_json(baton("inspect", "--json", "--detail", "events,task", tid))
    assert info["detail"]["task"]["effort"] == "high"
    logs = [e["data"]["message"] for e in info["detail"]["events"] if e["type"] == "log"]
    assert "effort high ignored: the fake CLI has no reasoning-effort option" in logs
    text, error = mcp.tool("delegate", instruction="x", effort="extreme")
    assert error and "effort" in text
