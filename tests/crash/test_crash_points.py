"""Kill -9 the broker at each named crash point of a task's run; the next broker finishes it.

Three fake tasks stream (two edit files, one only answers); the broker dies at the first
task to reach the point; a new broker (in this process) must bring the two to review with
exactly their agents' work and the third to answered, then an accept and a reject must land
on disk as decided.
"""

from __future__ import annotations

import pytest

from tests.crash.harness import Lab
from tests.crash.invariants import check_accepted, check_rejected, check_task
from tests.crash.works import adds_notes, answers, edits_app

pytestmark = pytest.mark.crash

#: The points of preparing and running a task, in the order a task passes them.
RUN_POINTS = [
    "before_snapshot",
    "after_snapshot",
    "after_worktree",
    "after_attempt_intent",
    "after_spawn",
    "after_exit",
]


async def test_harness_control_without_a_crash(lab: Lab) -> None:
    """The harness itself: an unarmed broker runs both tasks to the end and every check holds
    (so a failure of the tests below is the crash's doing, not the harness's)."""
    a, b, c = edits_app(lab.repo), adds_notes(lab.repo), answers(lab.repo)
    broker = lab.broker(delegate=[w.request(lab.repo) for w in (a, b, c)])
    ids = broker.ids()
    broker.proc.wait(60)
    assert broker.proc.returncode == 3, broker.report()
    sup = await lab.restart()
    await lab.settle_in(sup, ids)
    for tid, work in zip(ids, (a, b, c), strict=True):
        await check_task(sup, lab, tid, work)
    await sup.accept(ids[0])
    await check_accepted(sup, lab, ids[0], a)
    await sup.reject(ids[1])
    await check_rejected(sup, lab, ids[1], b)


@pytest.mark.parametrize("point", RUN_POINTS)
async def test_kill_at_point_then_a_new_broker_finishes_every_task(lab: Lab, point: str) -> None:
    works = [edits_app(lab.repo), adds_notes(lab.repo), answers(lab.repo)]
    requests = [w.request(lab.repo) for w in works]
    broker = lab.broker(crash_at=point, delegate=requests)
    broker.wait_killed()
    sup = await lab.restart()
    # The first task is recorded before any runs; the broker may die before the others are.
    ids = await lab.recorded(sup, requests)
    assert ids[0] is not None, "the first task was not recorded"
    made = [(tid, w) for tid, w in zip(ids, works, strict=True) if tid is not None]
    await lab.settle_in(sup, [tid for tid, _ in made])
    for tid, work in made:
        await check_task(sup, lab, tid, work)
    await sup.accept(ids[0])
    await check_accepted(sup, lab, ids[0], works[0])
    if ids[1] is not None:
        await sup.reject(ids[1])
        await check_rejected(sup, lab, ids[1], works[1])
