"""The planner flow in the runtime (:mod:`baton.runtime.planning`), on a real supervisor with
the fake agent as the planner: proposed, read, checked, approved once as a graph."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from baton.core.lifecycle import TaskState
from baton.runtime import Planning, PlanRefused, Supervisor
from tests.conftest import settle

PLAN = [
    {"key": "left", "instruction": "Create left/a.txt", "scope": ["left/**"], "worker": "doer"},
    {"key": "right", "instruction": "Create right/b.txt", "scope": ["right/**"]},
    {"key": "join", "instruction": "Write join.txt", "after": ["left", "right"]},
]


def planner(repo: Path, tmp_path: Path, body: dict[str, Any]) -> None:
    """The project's workers: ``planner`` plays ``body``; ``doer`` writes a file."""
    doer = {"steps": [{"write": "done.txt", "content": "done\n"}], "summary": "did it"}
    lines = ['default_worker = "doer"', 'only = ["planner", "doer"]']
    for name, script in (("planner", body), ("doer", doer)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(script))
        lines += [f"[profiles.{name}]", 'provider = "fake"', f'options = {{ script = "{path}" }}']
    (repo / ".baton.toml").write_text("\n".join(lines) + "\n")


async def test_a_plan_is_proposed_checked_and_approved_once(
    sup: Supervisor, repo: Path, tmp_path: Path
) -> None:
    planner(repo, tmp_path, {"steps": [], "summary": f"```json\n{json.dumps(PLAN)}\n```"})
    plans = Planning(sup)
    task = await plans.propose("Split the work", repo, worker="planner")
    assert task.options["read_only"] is True and task.title == "plan: Split the work"
    assert await settle(sup, task.id) == TaskState.ANSWERED
    found = await plans.proposal(task.id)
    assert (found.state, found.nodes, found.problems) == ("settled", PLAN, [])
    assert found.goal == "Split the work" and found.question is None

    created = await plans.approve(task.id)
    assert sorted(created) == ["join", "left", "right"]
    assert created["join"].options["depends_on"] == [created["left"].id, created["right"].id]
    assert all(t.root == str(repo.resolve()) for t in created.values())
    with pytest.raises(PlanRefused) as refused:
        await plans.approve(task.id)
    assert refused.value.tasks == {k: t.id for k, t in created.items()}
    again = await plans.proposal(task.id)
    assert again.approved == refused.value.tasks and again.problems[-1].startswith(
        "the plan was approved already"
    )


async def test_a_bad_plan_says_why_and_edited_nodes_are_checked_again(
    sup: Supervisor, repo: Path, tmp_path: Path
) -> None:
    bad = [{"key": "a", "instruction": "x", "worker": "nobody"}]
    planner(repo, tmp_path, {"steps": [], "summary": json.dumps(bad)})
    plans = Planning(sup)
    task = await plans.propose("Anything", repo, worker="planner")
    await settle(sup, task.id)
    found = await plans.proposal(task.id)
    assert found.nodes == bad
    assert found.problems == ["a: worker 'nobody' is not allowed here (allowed: doer, planner)"]
    with pytest.raises(PlanRefused) as refused:
        await plans.approve(task.id)
    assert refused.value.problems == found.problems
    with pytest.raises(PlanRefused):
        await plans.approve(task.id, [{"key": "a", "instruction": "x", "after": ["a"]}])
    created = await plans.approve(task.id, [{"key": "a", "instruction": "x", "worker": "doer"}])
    assert list(created) == ["a"] and created["a"].worker == "doer"


async def test_a_question_waits_for_a_reply(sup: Supervisor, repo: Path, tmp_path: Path) -> None:
    planner(repo, tmp_path, {"steps": [{"ask": "Which database?"}]})
    plans = Planning(sup)
    task = await plans.propose("Add storage", repo, worker="planner")
    assert await settle(sup, task.id) == TaskState.NEEDS_INPUT
    found = await plans.proposal(task.id)
    assert (found.state, found.question) == ("question", "Which database?")
    with pytest.raises(PlanRefused, match="asks a question"):
        await plans.approve(task.id)


async def test_a_rejected_plan_is_never_approved_and_a_working_planner_is_cancelled(
    sup: Supervisor, repo: Path, tmp_path: Path
) -> None:
    planner(repo, tmp_path, {"steps": [], "summary": json.dumps(PLAN)})
    plans = Planning(sup)
    task = await plans.propose("Split the work", repo, worker="planner")
    assert await settle(sup, task.id) == TaskState.ANSWERED
    await plans.reject(task.id)
    await plans.reject(task.id)  # twice: nothing more
    found = await plans.proposal(task.id)
    assert found.rejected and found.problems == ["the plan was rejected"]
    for nodes in (None, PLAN):  # neither its own nodes nor edited ones
        with pytest.raises(PlanRefused, match="was rejected"):
            await plans.approve(task.id, nodes)
    assert [t.id for t in await sup.list_tasks()] == [task.id]  # nothing of it started
    logs = [e.data.get("message") for e in await sup.events(task.id) if e.type == "log"]
    assert logs.count("plan rejected: nothing of it runs") == 1

    planner(repo, tmp_path, {"steps": [{"sleep": 30}], "summary": json.dumps(PLAN)})
    slow = await plans.propose("Slow", repo, worker="planner")
    await plans.reject(slow.id)  # cancelled as it works (its state follows)
    assert await settle(sup, slow.id) == TaskState.CANCELLED
    assert (await plans.proposal(slow.id)).problems[-1] == "the plan was rejected"


async def test_an_approved_plan_cannot_be_rejected(
    sup: Supervisor, repo: Path, tmp_path: Path
) -> None:
    planner(repo, tmp_path, {"steps": [], "summary": json.dumps(PLAN)})
    plans = Planning(sup)
    task = await plans.propose("Split the work", repo, worker="planner")
    await settle(sup, task.id)
    created = await plans.approve(task.id)
    with pytest.raises(PlanRefused, match="approved already") as refused:
        await plans.reject(task.id)
    assert refused.value.tasks == {k: t.id for k, t in created.items()}
