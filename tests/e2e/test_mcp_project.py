"""The ``project`` tool of ``baton mcp`` (issue 21): a planner's graph proposed, checked,
approved once and run; a question answered with ``task`` reply; the project's default worker
shown and set (the project's file only); ``clean``; ``memory``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli import stop_brokers
from tests.e2e.test_mcp_bridge import McpProcess, initialize
from tests.integration.test_planning import PLAN, planner

CYCLE = [
    {"key": "a", "instruction": "x", "after": ["b"], "scope": ["a/**"]},
    {"key": "b", "instruction": "y", "after": ["a"], "scope": ["b/**"]},
]


@pytest.fixture
def mcp(baton_home: Path, repo: Path, tmp_path: Path) -> Iterator[McpProcess]:
    proc = McpProcess(repo)
    initialize(proc)
    try:
        yield proc
    finally:
        proc.close()
        stop_brokers(tmp_path / "run" / "baton")


def answer(mcp: McpProcess, tool: str, **arguments: Any) -> Any:
    text, error = mcp.tool(tool, **arguments)
    assert not error, text
    return json.loads(text)


def test_a_plan_is_proposed_approved_once_and_runs(
    mcp: McpProcess, repo: Path, tmp_path: Path
) -> None:
    planner(repo, tmp_path, {"steps": [{"say": "reading"}], "summary": json.dumps(PLAN)})
    read = answer(mcp, "project", op="plan", text="Split the work", worker="planner")
    assert read["task"]["state"] == "answered"
    assert (read["nodes"], read["problems"]) == (PLAN, [])
    tid = read["task"]["id"]

    ran = answer(mcp, "project", op="approve", id=tid)["tasks"]
    assert sorted(ran) == ["join", "left", "right"] and ran["join"]["state"] == "queued"
    woke = answer(mcp, "watch", ids=[ran["left"]["id"]], timeout=60)
    assert woke["id"] == ran["left"]["id"] and woke["state"] == "review"
    text, error = mcp.tool("project", op="approve", id=tid)
    assert error and "approved already" in text and ran["left"]["id"] in text
    assert len(answer(mcp, "tasks")) == 4  # the planner and its three tasks, once

    text, error = mcp.tool("project", op="plan", text="x", id=tid)
    assert error and "not both" in text
    text, error = mcp.tool("project", op="clean", text="x")
    assert error and "op clean takes no text" in text


def test_a_bad_plan_is_refused_with_its_reasons_and_edited(
    mcp: McpProcess, repo: Path, tmp_path: Path
) -> None:
    planner(repo, tmp_path, {"steps": [], "summary": json.dumps(CYCLE)})
    read = answer(mcp, "project", op="plan", text="Loop", worker="planner")
    assert read["problems"] == ["the plan has a cycle: a → b → a"]
    text, error = mcp.tool("project", op="approve", id=read["task"]["id"])
    assert error and "the plan has a cycle: a → b → a" in text
    edited = [CYCLE[0] | {"after": []}, CYCLE[1]]
    ran = answer(mcp, "project", op="approve", id=read["task"]["id"], nodes=edited)["tasks"]
    assert sorted(ran) == ["a", "b"]


def test_a_planner_asks_and_is_answered_with_task_reply(
    mcp: McpProcess, repo: Path, tmp_path: Path
) -> None:
    script = {"steps": [{"ask": "Which database?"}], "summary": json.dumps(PLAN)}
    planner(repo, tmp_path, script)
    asked = answer(mcp, "project", op="plan", text="Add storage", worker="planner")
    assert asked["question"] == "Which database?" and "nodes" not in asked
    tid = asked["task"]["id"]
    assert answer(mcp, "task", id=tid, action="reply", text="SQLite")["id"] == tid
    read = answer(mcp, "project", op="plan", id=tid)
    assert read["nodes"] == PLAN and read["problems"] == []


def test_love_clean_and_memory(mcp: McpProcess, repo: Path, tmp_path: Path) -> None:
    planner(repo, tmp_path, {"steps": []})  # the project's workers: planner and doer
    shown = answer(mcp, "project", op="love")
    assert shown["default"] == "doer"
    chosen = answer(mcp, "project", op="love", worker="planner")
    assert chosen["file"] == str(repo / ".baton.toml") and chosen["changed"] is True
    assert 'default_worker = "planner"' in (repo / ".baton.toml").read_text()
    assert answer(mcp, "project", op="love")["default"] == "planner"
    text, error = mcp.tool("project", op="love", worker="ghost")
    assert error and "unknown worker 'ghost'" in text

    cleaned = answer(mcp, "project", op="clean")
    assert {"worktrees", "refs", "pool"} <= set(cleaned)

    added = answer(mcp, "project", op="memory", text="Run make test.")
    assert [m["text"] for m in added] == ["Run make test."]
    assert answer(mcp, "project", op="memory", id=added[0]["id"]) == []
    text, error = mcp.tool("project", op="memory", id="first")
    assert error and "not a fact's number" in text
