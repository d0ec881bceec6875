"""Kill -9 the broker right after a task took a checkout from the warm pool.

The take is a rename of a ready pool checkout to the task's place, its pool record still
inside (the intent: this checkout is the task's, not yet moved to its snapshot); crash point
``pool_taken`` is just after it. The next broker must finish the move — or, when the
checkout changed meanwhile, discard it and make a fresh one — and the task must end with
exactly its agent's work, as after any crash.
"""

from __future__ import annotations

import pytest

from baton.store.paths import worktrees_dir
from baton.workspace.pool import RECORD, PoolLimits, all_slots, fill
from tests.conftest import git
from tests.crash.harness import Lab
from tests.crash.invariants import check_accepted, check_task
from tests.crash.works import edits_app

pytestmark = pytest.mark.crash

POOL = {"size": 1, "min_files": 1}


def warm(lab: Lab) -> str:
    """The lab's pool holds one ready checkout of the repository's HEAD; its folder name."""
    head = git(lab.repo, "rev-parse", "HEAD").strip()
    wts = worktrees_dir(lab.home)
    assert fill(lab.repo / ".git", head, wts, PoolLimits(**POOL)) == 1
    (slot,) = all_slots(wts)
    return slot.path.name


async def test_kill_after_the_take_then_the_next_broker_finishes_the_move(lab: Lab) -> None:
    taken = warm(lab)
    work = edits_app(lab.repo)
    request = work.request(lab.repo)
    lab.broker(crash_at="pool_taken", delegate=[request], pool=POOL).wait_killed()
    wts = worktrees_dir(lab.home)
    assert all_slots(wts) == [], "the taken checkout is still offered by the pool"
    (place,) = [p for p in wts.iterdir() if not p.name.startswith(".")]
    assert (place / ".git" / RECORD).is_file(), "the take was not recorded at the task's place"
    sup = await lab.restart()
    tid = await lab.the_task(sup, request)
    assert place.name == tid
    await lab.settle_in(sup, [tid])
    await check_task(sup, lab, tid, work)
    task = await sup.get(tid)
    assert task.options["checkout"] == "pool"  # finished, not made again
    assert not (place / ".git" / RECORD).exists()
    assert taken not in {s.path.name for s in all_slots(wts)}
    await sup.accept(tid)
    await check_accepted(sup, lab, tid, work)


async def test_a_taken_checkout_changed_after_the_crash_is_not_used(lab: Lab) -> None:
    warm(lab)
    work = edits_app(lab.repo)
    request = work.request(lab.repo)
    lab.broker(crash_at="pool_taken", delegate=[request], pool=POOL).wait_killed()
    wts = worktrees_dir(lab.home)
    (place,) = [p for p in wts.iterdir() if not p.name.startswith(".")]
    (place / "stray.txt").write_text("written while no broker ran\n")
    (place / "notes.txt").write_text("changed while no broker ran\n")
    sup = await lab.restart()
    tid = await lab.the_task(sup, request)
    await lab.settle_in(sup, [tid])
    await check_task(sup, lab, tid, work)  # the diff is the agent's work and nothing else
    task = await sup.get(tid)
    assert task.options["checkout"] == "fresh"
    files, _ = await sup.diff(tid)
    assert [f.path for f in files] == ["app.py"]
    await sup.accept(tid)
    await check_accepted(sup, lab, tid, work)
