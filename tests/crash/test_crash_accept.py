"""Kill -9 the broker in the middle of an accept or a reject (issue 14, case 4).

The task is brought to review by one broker; a second one, armed with a crash point,
accepts (or rejects) it and dies part-way. The next broker must find the journal and finish
it (or, where no user file was touched yet, may roll it back): in the end the hunk decisions
and the user's files agree, and no temporary file is left in the user's tree.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import pytest

from baton.core.diff import HunkState
from baton.core.lifecycle import TaskState
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor
from tests.crash.harness import DEADLINE, Lab
from tests.crash.invariants import (
    Work,
    check_accepted,
    check_decisions,
    check_no_temp_files,
    check_rejected,
    check_task,
    check_untouched,
)

pytestmark = pytest.mark.crash

S = TaskState


def three_files(lab: Lab) -> Work:
    return Work.of(
        lab.repo,
        [
            {"say": "changing three files"},
            {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
            {"append": "notes.txt", "text": "six\n"},
            {"write": "docs/new.md", "content": "# new\n"},
        ],
        "three files changed",
    )


def many_files(lab: Lab, n: int = 300) -> Work:
    steps = [{"write": f"gen/f{i:03d}.txt", "content": f"file {i}\n"} for i in range(n)]
    return Work.of(lab.repo, [{"say": f"writing {n} files"}, *steps], f"{n} files written")


async def in_review(lab: Lab, work: Work) -> str:
    """Delegate ``work`` to a broker of this process, wait for review, check it, stop it."""
    sup = await lab.restart()
    task = await sup.delegate(DelegateRequest(**work.request(lab.repo)))
    await lab.settle_in(sup, [task.id])
    await check_task(sup, lab, task.id, work)
    await sup.close()
    lab.sups.remove(sup)
    return task.id


async def decided(
    sup: Supervisor, task_id: str, want: Sequence[TaskState], timeout: float = DEADLINE
) -> TaskState:
    """Wait until the task is in one of ``want``; the state it reached."""
    deadline = time.monotonic() + timeout
    while (state := (await sup.get(task_id)).state) not in want:
        if time.monotonic() > deadline:
            task = await sup.get(task_id)
            raise AssertionError(
                f"task {task_id} still {state} ({task.message!r}) {timeout:.0f} s after the "
                f"restart: the journal of the interrupted decision was never finished"
            )
        await asyncio.sleep(0.05)
    return state


async def rolled_back(sup: Supervisor, lab: Lab, task_id: str, work: Work) -> None:
    """A rolled-back decision: still in review, every hunk pending, nothing on disk."""
    await check_decisions(sup, task_id, HunkState.PENDING)
    check_untouched(lab, work)
    check_no_temp_files(lab.repo)


async def test_accept_of_300_files_killed_at_the_150th_is_finished_by_the_next_broker(
    lab: Lab,
) -> None:
    work = many_files(lab)
    tid = await in_review(lab, work)
    broker = lab.broker(crash_at="accept_file:150", tasks=[tid], accept=tid)
    broker.wait_killed()
    written = sum(1 for _ in (lab.repo / "gen").glob("*.txt"))
    assert 0 < written < 300, f"{written} files on disk when the broker died at the 150th"
    sup = await lab.restart()
    await decided(sup, tid, [S.APPLIED])
    await check_accepted(sup, lab, tid, work)


@pytest.mark.parametrize("point", ["accept_journal", "accept_file:2", "accept_marked"])
async def test_accept_killed_at_point(lab: Lab, point: str) -> None:
    """accept_journal: no file touched yet, so the next broker finishes or rolls back (then
    the user accepts again); after a file or the decisions were written it must finish."""
    work = three_files(lab)
    tid = await in_review(lab, work)
    broker = lab.broker(crash_at=point, tasks=[tid], accept=tid)
    broker.wait_killed()
    left = sorted(p.name for p in lab.broker_tmp.iterdir() if p.name.startswith("baton-"))
    assert not left, f"the killed broker left {left} in its temporary folder"
    sup = await lab.restart()
    if point == "accept_journal":
        await asyncio.sleep(2.0)  # time to finish the journal, if that is what it does
        if (await sup.get(tid)).state == S.REVIEW:
            await rolled_back(sup, lab, tid, work)
            await sup.accept(tid)
    await decided(sup, tid, [S.APPLIED])
    await check_accepted(sup, lab, tid, work)


async def test_reject_killed_after_its_decisions_are_stored(lab: Lab) -> None:
    """A reject stores its decisions and the task's end in one transaction, so a kill
    right after it (reject_marked) leaves the task rejected; the next broker removes the
    worktree the dead one did not get to."""
    work = three_files(lab)
    tid = await in_review(lab, work)
    broker = lab.broker(crash_at="reject_marked", tasks=[tid], reject=tid)
    broker.wait_killed()
    sup = await lab.restart()
    await decided(sup, tid, [S.REJECTED])
    await check_rejected(sup, lab, tid, work)
