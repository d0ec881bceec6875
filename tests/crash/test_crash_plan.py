"""A plan's approval killed half-way (``plan_node``: some of its tasks delegated, the
approval not recorded), and two brokers approving one plan at once: the graph runs once —
the next approval finishes the one that was intended, delegating only the nodes not stored
yet, and a plan whose approval began can no longer be rejected."""

from __future__ import annotations

import asyncio
import json

import pytest

from baton.core.lifecycle import TaskState
from baton.runtime import Planning, PlanRefused, Supervisor
from baton.runtime.planning import UNFINISHED
from tests.crash.harness import Lab
from tests.integration.test_planning import PLAN, planner

pytestmark = pytest.mark.crash

S = TaskState
INSTRUCTIONS = {n["instruction"] for n in PLAN}


async def proposed(lab: Lab) -> tuple[Supervisor, str]:
    """A settled planner whose answer is :data:`PLAN`, in a broker of this process."""
    planner(lab.repo, lab.scratch, {"steps": [], "summary": f"```json\n{json.dumps(PLAN)}\n```"})
    sup = await lab.restart()
    task = await Planning(sup).propose("Split the work", lab.repo, worker="planner")
    await lab.settle_in(sup, [task.id])
    assert (await sup.get(task.id)).state == S.ANSWERED
    return sup, task.id


async def graph_tasks(sup: Supervisor) -> list[str]:
    """Every stored task that is a node of the plan (one per node when it ran once)."""
    tasks = await sup.list_tasks(limit=None)
    return sorted(t.instruction for t in tasks if t.instruction in INSTRUCTIONS)


async def test_an_approval_killed_after_its_first_task_is_finished_once_by_the_next(
    lab: Lab,
) -> None:
    sup, planner_id = await proposed(lab)
    await sup.close()
    lab.sups.remove(sup)

    broker = lab.broker(crash_at="plan_node:1", tasks=[planner_id], approve=planner_id)
    broker.wait_killed()

    sup = await lab.restart()
    plans = Planning(sup)
    assert len(await graph_tasks(sup)) == 1  # the first node, and no record of the rest
    found = await plans.proposal(planner_id)
    assert found.approved is None and UNFINISHED in found.problems
    with pytest.raises(PlanRefused, match="being approved"):
        await plans.reject(planner_id)  # some of it runs already: no longer a "no"

    created = await plans.approve(planner_id, nodes=[PLAN[0]])  # the intended one wins
    assert sorted(created) == ["join", "left", "right"]
    assert await graph_tasks(sup) == sorted(INSTRUCTIONS)  # each node once
    assert created["join"].options["depends_on"] == [created["left"].id, created["right"].id]
    with pytest.raises(PlanRefused, match="approved already"):
        await plans.approve(planner_id)
    await lab.settle_in(sup, [created["left"].id, created["right"].id])
    for key in ("left", "right"):
        assert len(lab.runs(created[key].id)) == 1, lab.runs(created[key].id)
    assert (await sup.get(created["join"].id)).state == S.QUEUED  # waits for its two
    await lab.no_lingering()


async def test_two_brokers_approving_one_plan_at_once_run_it_once(lab: Lab) -> None:
    first, planner_id = await proposed(lab)
    second = await lab.restart()  # another broker of the same state home

    results = await asyncio.gather(
        Planning(first).approve(planner_id),
        Planning(second).approve(planner_id),
        return_exceptions=True,
    )
    made = [r for r in results if isinstance(r, dict)]
    refused = [r for r in results if isinstance(r, PlanRefused)]
    assert len(made) == 1 and len(refused) == 1, results
    assert refused[0].tasks == {k: t.id for k, t in made[0].items()}
    assert await graph_tasks(first) == sorted(INSTRUCTIONS)
    await lab.settle_in(first, [made[0]["left"].id, made[0]["right"].id])
    for key in ("left", "right"):
        assert len(lab.runs(made[0][key].id)) == 1
