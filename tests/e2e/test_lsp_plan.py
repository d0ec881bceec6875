"""``baton.plan``, ``baton.planApprove`` and ``baton.planReject`` through ``baton lsp``, with
Neovim's and VS Code's recorded capabilities and the fake agent as the planner (issue 21):
the proposal comes as ``baton/plan`` (never as an answer to read), approving runs it as a
graph whose tasks reach the editor as any tasks do, an invalid plan is refused with its
reasons (and edited nodes are checked again), and a question the planner asks goes through
the question flow and the planner plans again once answered."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from baton.surfaces.lsp.planning import APPROVE, NOTIFY, PLAN, REJECT
from tests.e2e.lsp_support import EDITORS, Session, start, stop, wait_for
from tests.e2e.test_cli_plan import CYCLE, profiles
from tests.e2e.test_cli_plan import PLAN as NODES

GOAL = "Split the work"


@pytest.fixture(params=EDITORS)
async def lsp(
    request: pytest.FixtureRequest, repo: Path, baton_home: Path
) -> AsyncIterator[Session]:
    session = await start(request.param, repo, baton_home, options={"progressInterval": 0.05})
    yield session
    await stop(session)


async def proposal(lsp: Session, task_id: str, count: int = 1) -> dict[str, Any]:
    """The ``count``-th ``baton/plan`` of the planner (1: its first)."""
    found = await wait_for(
        lambda: len(sent := [p for p in lsp.rec.plans if p["taskId"] == task_id]) >= count and sent,
        timeout=60,
        what=f"{NOTIFY} #{count} of {task_id}",
    )
    plan: dict[str, Any] = found[count - 1]
    return plan


def listed(lsp: Session, task_id: str) -> bool:
    return bool(lsp.rec.task_states(task_id))


async def test_a_plan_is_proposed_approved_and_run_as_a_graph(lsp: Session, tmp_path: Path) -> None:
    answer = f"Here is the plan.\n```json\n{json.dumps(NODES)}\n```\n"
    profiles(lsp.repo, tmp_path, {"steps": [{"say": "reading"}], "summary": answer})
    started = await lsp.command(PLAN, {"goal": GOAL, "worker": "planner"})
    planner = started["taskId"]
    assert started["title"] == f"plan: {GOAL}"
    plan = await proposal(lsp, planner)
    assert plan["state"] == "proposed" and plan["goal"] == GOAL and plan["problems"] == []
    assert [n["key"] for n in plan["nodes"]] == ["left", "right", "join"]
    join = plan["nodes"][2]
    assert join == {
        "key": "join",
        "title": "Write join.txt",
        "instruction": "Write join.txt",
        "worker": "doer",
        "after": ["left", "right"],
        "scope": None,
        "kind": None,
    }
    assert plan["nodes"][0]["scope"] == ["left/**"]
    # Its answer is the plan: not opened as a document, not said in a message.
    assert lsp.client.shown_documents == []
    assert not [m for m in lsp.client.messages if "left/a.txt" in m.message]

    ran = await lsp.command(APPROVE, {"taskId": planner})
    assert ran["taskId"] == planner and sorted(ran["tasks"]) == ["join", "left", "right"]
    ids = ran["tasks"]
    for key in ("left", "right"):
        assert await lsp.settle(ids[key], timeout=60) == "review"
    assert await lsp.state(ids["join"]) == "queued"  # until left and right are accepted
    await wait_for(lambda: all(listed(lsp, i) for i in ids.values()), what="tasks listed")
    # A plan is approved once.
    with pytest.raises(JsonRpcException, match="approved already"):
        await lsp.command(APPROVE, {"taskId": planner})


async def test_an_invalid_plan_is_refused_and_edited_nodes_are_checked_again(
    lsp: Session, tmp_path: Path
) -> None:
    profiles(lsp.repo, tmp_path, {"steps": [], "summary": json.dumps(CYCLE)})
    planner = (await lsp.command(PLAN, {"goal": "Loop", "worker": "planner"}))["taskId"]
    plan = await proposal(lsp, planner)
    assert plan["state"] == "proposed"
    assert plan["problems"] == ["the plan has a cycle: a → b → a"]
    assert [n["after"] for n in plan["nodes"]] == [["b"], ["a"]]
    with pytest.raises(JsonRpcException, match="the plan has a cycle: a → b → a"):
        await lsp.command(APPROVE, {"taskId": planner})
    overlapping = [{**n, "after": [], "scope": ["src/**"]} for n in CYCLE]
    with pytest.raises(JsonRpcException, match="a and b may run at once"):
        await lsp.command(APPROVE, {"taskId": planner, "nodes": overlapping})
    with pytest.raises(JsonRpcException, match="nodes must be a list"):
        await lsp.command(APPROVE, {"taskId": planner, "nodes": {"a": 1}})
    fixed = [CYCLE[0] | {"after": []}, CYCLE[1]]
    ran = await lsp.command(APPROVE, {"taskId": planner, "nodes": fixed})
    assert sorted(ran["tasks"]) == ["a", "b"]
    assert (await lsp.command("baton.inspect", {"taskId": ran["tasks"]["a"]}))["task"][
        "instruction"
    ].startswith("x")

    # A planner whose answer holds no plan: said, nothing to approve.
    profiles(lsp.repo, tmp_path, {"steps": [], "summary": "I would rather not."})
    other = (await lsp.command(PLAN, {"goal": "Anything", "worker": "planner"}))["taskId"]
    said = await proposal(lsp, other)
    assert said["state"] == "failed" and "holds no JSON list of nodes" in said["message"]
    with pytest.raises(JsonRpcException, match="holds no JSON list of nodes"):
        await lsp.command(APPROVE, {"taskId": other})


async def test_a_question_goes_through_the_question_flow_then_the_plan_comes(
    lsp: Session, tmp_path: Path
) -> None:
    script = {"steps": [{"ask": "Which database?"}], "summary": json.dumps(NODES)}
    profiles(lsp.repo, tmp_path, script)
    planner = (await lsp.command(PLAN, {"goal": "Add storage", "worker": "planner"}))["taskId"]
    asked = await proposal(lsp, planner)
    assert asked["state"] == "asks" and asked["question"] == "Which database?"
    await wait_for(lambda: "needs_input" in lsp.rec.task_states(planner), what="the question")
    with pytest.raises(JsonRpcException, match="asks a question"):
        await lsp.command(APPROVE, {"taskId": planner})
    await lsp.command("baton.reply", {"taskId": planner, "text": "SQLite"})
    plan = await proposal(lsp, planner, 2)
    assert plan["state"] == "proposed" and len(plan["nodes"]) == 3 and plan["problems"] == []

    rejected = await lsp.command(REJECT, {"taskId": planner})
    assert rejected == {"taskId": planner, "state": "answered", "rejected": True}
    tasks = await lsp.command("baton.tasks", {})
    assert [t["id"] for t in tasks["tasks"]] == [planner]  # nothing of the plan started
    # A planner still at work is cancelled when its plan is rejected.
    profiles(lsp.repo, tmp_path, {"steps": [{"sleep": 30}], "summary": "[]"})
    slow = (await lsp.command(PLAN, {"goal": "Slowly", "worker": "planner"}))["taskId"]
    await lsp.settle(slow, "running", timeout=30)
    assert (await lsp.command(REJECT, {"taskId": slow}))["rejected"] is True
    assert await lsp.settle(slow, "cancelled", "failed", timeout=30) == "cancelled"
    with pytest.raises(JsonRpcException, match="goal must be a non-empty string"):
        await lsp.command(PLAN, {"goal": " "})
    # Replied to (so followed by this editor), its answer was still not shown as text
    # (checked last: the notifier's flush that would show it has long run).
    assert lsp.client.shown_documents == []
    assert not [m for m in lsp.client.messages if "left/a.txt" in m.message]
