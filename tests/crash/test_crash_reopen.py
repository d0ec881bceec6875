"""Kill -9 the broker in the middle of a reopen: an accepted hunk the user undid (issue 17).

A reopen of an applied task restores the snapshot ref (git), then stores the hunk's new
state and the task's in one transaction. Killed between the two (``reopen_ref``), the next
broker finds the task still applied with every hunk accepted — the decision was not made —
and its sweep removes the stray ref; the client, whose document still holds the old text,
asks again, and then the decision lands; accepting the hunk again writes it as before.
"""

from __future__ import annotations

import subprocess

import pytest

from baton.core.diff import HunkState
from baton.core.lifecycle import TaskState
from tests.crash.harness import Lab
from tests.crash.invariants import check_accepted, check_decisions, check_user_edits
from tests.crash.test_crash_accept import in_review, three_files

pytestmark = pytest.mark.crash

S = TaskState


def snapshot_ref(lab: Lab, task_id: str) -> str | None:
    proc = subprocess.run(
        ["git", "rev-parse", "--verify", "-q", f"refs/baton/snapshots/{task_id}"],
        cwd=lab.repo,
        capture_output=True,
        text=True,
    )
    return proc.stdout.strip() or None


async def test_reopen_killed_before_its_decision_is_stored(lab: Lab) -> None:
    work = three_files(lab)
    tid = await in_review(lab, work)
    sup = await lab.restart()
    await sup.accept(tid)
    await check_accepted(sup, lab, tid, work)
    files, _ = await sup.diff(tid)
    [app] = [h.id for f in files if f.path == "app.py" for h in f.hunks]
    await sup.close()
    lab.sups.remove(sup)
    lab.edit_repo("app.py", "    return 10\n", "    return 1\n")  # the user's undo, saved

    broker = lab.broker(crash_at="reopen_ref", tasks=[tid], reopen=(tid, [app]))
    broker.wait_killed()
    assert snapshot_ref(lab, tid) is not None, "the broker died before it restored the ref"

    sup = await lab.restart()
    task = await sup.get(tid)
    assert task.state == S.APPLIED, f"a reopen that was not stored moved the task: {task.state}"
    await check_decisions(sup, tid, HunkState.ACCEPTED)
    assert snapshot_ref(lab, tid) is None, "the sweep left the stray ref of an applied task"
    check_user_edits(lab)  # nothing wrote over the user's undo

    done = await sup.reopen(tid, [app])  # the client asks again
    assert done.decided == [app]
    assert (await sup.get(tid)).state == S.REVIEW
    states = {h.id: h.state for f in (await sup.diff(tid))[0] for h in f.hunks}
    assert states.pop(app) == HunkState.PENDING
    assert set(states.values()) == {HunkState.ACCEPTED}
    assert snapshot_ref(lab, tid) is not None
    check_user_edits(lab)

    await sup.accept(tid, [app])
    lab.user_edits.pop("app.py")  # accepted again, over the user's undo
    await check_accepted(sup, lab, tid, work)
