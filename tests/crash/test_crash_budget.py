"""Kill -9 the broker between a budget's stop being recorded and being done (crash point
``budget_stop``): the next broker finds the recorded stop, ends the agent that still runs,
and settles the task as stopped by its budget — its work so far in review, the agent run
once, nothing left running."""

from __future__ import annotations

import pytest

from baton.core.events import EventType
from baton.core.lifecycle import Completion, TaskState
from tests.crash.harness import Lab, delegate_json

pytestmark = pytest.mark.crash


async def test_a_budget_stop_recorded_before_a_crash_is_done_by_the_next_broker(
    lab: Lab,
) -> None:
    request = delegate_json(
        [
            {"write": "a.txt", "content": "a\n"},
            {"usage": {"input": 1100, "output": 100}},  # over the cap of 1000
            {"sleep": 30},
            {"write": "b.txt", "content": "b\n"},
        ],
        lab.repo,
        options={"budget": {"tokens": 1000}},
    )
    broker = lab.broker(crash_at="budget_stop", delegate=[request])
    broker.wait_killed()
    tid = await lab.the_task((sup := await lab.restart()), request)
    await lab.settle_in(sup, [tid])
    task = await sup.get(tid)
    assert task.state == TaskState.REVIEW and task.completion == Completion.BUDGET, task.message
    files, final = await sup.diff(tid)
    assert final and [f.path for f in files] == ["a.txt"]
    stops = [
        e for e in await sup.events(tid) if e.type == EventType.BUDGET and e.data["kind"] == "stop"
    ]
    assert len(stops) == 1  # recorded once, by the broker that died; done by the next
    assert len(lab.runs(tid)) == 1  # the agent ran once
    [attempt] = await sup.attempts(tid)
    assert attempt.completion == Completion.BUDGET
    await lab.no_lingering()


async def test_an_adopted_attempt_is_still_held_to_its_budget(lab: Lab) -> None:
    """The broker dies right after starting the agent (``after_spawn``); the next one adopts
    the running attempt and stops it when its usage reaches the cap."""
    request = delegate_json(
        [
            {"write": "a.txt", "content": "a\n"},
            {"sleep": 2},  # the first broker is gone by now
            {"usage": {"input": 1100, "output": 100}},
            {"sleep": 30},
            {"write": "b.txt", "content": "b\n"},
        ],
        lab.repo,
        options={"budget": {"tokens": 1000}},
    )
    broker = lab.broker(crash_at="after_spawn", delegate=[request])
    broker.wait_killed()
    sup = await lab.restart()
    tid = await lab.the_task(sup, request)
    await lab.settle_in(sup, [tid])
    task = await sup.get(tid)
    assert task.state == TaskState.REVIEW and task.completion == Completion.BUDGET, task.message
    files, _ = await sup.diff(tid)
    assert [f.path for f in files] == ["a.txt"]
    assert len(lab.runs(tid)) == 1
    await lab.no_lingering()
