"""The warm pool: ready checkouts a task takes and moves to its snapshot (real git).

A hit must give exactly what a fresh checkout gives; a pool checkout something changed
(a file edited, added or ignored, its index, record or repository set-up damaged) is
discarded, never used; the pool keeps within its caps, and ``baton clean`` empties it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from baton.core.lifecycle import TaskState
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor
from baton.workspace import compute_diff, create_worktree, take_snapshot
from baton.workspace.checkout import seed_index_of
from baton.workspace.git import IDLE_NICE, idle, run_git
from baton.workspace.pool import (
    RECORD,
    TRASH,
    PoolLimits,
    all_slots,
    claim,
    clear,
    fill,
    pool_dir,
    ready_slots,
    repo_pool,
    sweep,
    take,
    tracked_files,
)
from baton.workspace.refill import Refiller
from baton.workspace.snapshot import Snapshot
from baton.workspace.worktree import worktree_fits
from tests.conftest import fake_script, git, settle

ONE = PoolLimits(size=1, min_files=1)
TWO = PoolLimits(size=2, min_files=1)


@pytest.fixture
def wts(tmp_path: Path) -> Path:
    path = tmp_path / "state" / "worktrees"
    path.mkdir(parents=True)
    return path


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def big(repo: Path) -> Path:
    """The ``repo`` fixture with an ignore file and a few more files in folders."""
    (repo / ".gitignore").write_text("*.log\nbuild/\n")
    for i in range(6):
        (repo / "pkg" / f"m{i}.py").parent.mkdir(exist_ok=True)
        (repo / "pkg" / f"m{i}.py").write_text(f"x = {i}\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "more")
    return repo


def files_of(path: Path) -> dict[str, bytes]:
    return {
        p.relative_to(path).as_posix(): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(path).parts
    }


def snapshot(repo: Path, state: Path, task_id: str) -> Snapshot:
    return take_snapshot(repo, task_id, state_home=state)


def warm(repo: Path, state: Path, wts: Path, limits: PoolLimits = ONE) -> Snapshot:
    """A pool filled at a snapshot of ``repo`` as it is now."""
    snap = snapshot(repo, state, "warmup")
    assert fill(snap.git_dir, snap.commit, wts, limits) == limits.size
    return snap


def test_a_hit_is_the_snapshot_exactly(big: Path, state: Path, wts: Path) -> None:
    warm(big, state, wts)
    # The user goes on: an edit, a new file, a deletion, a file made executable.
    (big / "app.py").write_text("def a():\n    return 10\n")
    (big / "new.txt").write_text("new\n")
    (big / "pkg" / "m0.py").unlink()
    (big / "pkg" / "m1.py").chmod(0o755)
    snap = snapshot(big, state, "t1")
    path = take(snap, "t1", wts, ONE)
    assert path == wts / "t1"
    assert ready_slots(repo_pool(wts, snap.git_dir)) == []
    fresh = create_worktree(snapshot(big, state, "f1"), "f1", wts)
    assert files_of(path) == files_of(fresh)
    assert os.access(path / "pkg" / "m1.py", os.X_OK)
    own = path / ".git"
    assert (own / "HEAD").read_text() == "ref: refs/heads/baton/t1\n"
    assert run_git(["rev-parse", "HEAD"], path, git_dir=own).strip() == snap.commit
    assert run_git(["for-each-ref", "--format=%(refname)"], path, git_dir=own).split() == [
        "refs/heads/baton/t1"
    ]
    assert not (own / RECORD).exists()
    assert seed_index_of(path).is_file()
    assert worktree_fits(snap, path)
    # The agent's work in it is diffed as in a fresh checkout.
    (path / "notes.txt").write_text("one\n2\nthree\nfour\nfive\n")
    (diff,) = compute_diff(snap, path)
    assert diff.path == "notes.txt"
    assert [(h.old_text, h.new_text) for h in diff.hunks] == [("two\n", "2\n")]


def test_a_hit_at_the_same_tree_moves_no_file(
    big: Path, state: Path, wts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from baton.workspace import pool

    warm(big, state, wts)
    ran: list[str] = []
    real = pool.run_git

    def recording(args: list[str], *a: object, **kw: object) -> str:
        ran.append(args[0])
        return real(args, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(pool, "run_git", recording)
    snap = snapshot(big, state, "t1")  # nothing changed since the pool was filled
    path = take(snap, "t1", wts, ONE)
    assert path is not None and worktree_fits(snap, path)
    assert ran == ["status"]


def test_a_miss_leaves_nothing_and_a_small_repository_has_no_pool(
    big: Path, state: Path, wts: Path
) -> None:
    snap = snapshot(big, state, "t1")
    assert take(snap, "t1", wts, ONE) is None
    assert not (wts / "t1").exists()
    warm(big, state, wts)
    few = PoolLimits(size=1, min_files=tracked_files(snap.git_dir) + 1)
    assert take(snap, "t1", wts, few) is None  # too few files: a fresh checkout is as quick
    assert fill(snap.git_dir, snap.commit, wts, few) == 0
    assert take(snap, "t1", wts, PoolLimits(size=0, min_files=1)) is None
    assert len(all_slots(wts)) == 1
    assert not (wts / "t1").exists()


def _edit_tracked(slot: Path) -> None:
    (slot / "pkg" / "m3.py").write_text("changed while it waited\n")


def _edit_what_the_snapshot_changes(slot: Path) -> None:
    (slot / "app.py").write_text("changed while it waited\n")


def _add_untracked(slot: Path) -> None:
    (slot / "pkg" / "stray.py").write_text("x\n")


def _add_ignored(slot: Path) -> None:
    (slot / "build").mkdir()
    (slot / "build" / "out.log").write_text("left over\n")


def _delete_index(slot: Path) -> None:
    (slot / ".git" / "index").unlink()


def _garble_index(slot: Path) -> None:
    (slot / ".git" / "index").write_bytes(b"DIRC not an index")


def _garble_record(slot: Path) -> None:
    (slot / ".git" / RECORD).write_text("{")


def _other_objects(slot: Path) -> None:
    (slot / ".git" / "objects" / "info" / "alternates").write_text("/nowhere/objects\n")


def _converting_attributes(slot: Path) -> None:
    (slot / ".git" / "info" / "attributes").write_text("* text=auto\n")


@pytest.mark.parametrize(
    "damage",
    [
        _edit_tracked,
        _edit_what_the_snapshot_changes,
        _add_untracked,
        _add_ignored,
        _delete_index,
        _garble_index,
        _garble_record,
        _other_objects,
        _converting_attributes,
    ],
)
@pytest.mark.parametrize("user_edits", [True, False], ids=["tree_moved", "same_tree"])
def test_a_changed_or_damaged_pool_checkout_is_discarded(
    big: Path, state: Path, wts: Path, damage: object, user_edits: bool
) -> None:
    warm(big, state, wts)
    (ready,) = ready_slots(repo_pool(wts, big / ".git"))
    slot = ready.path
    assert callable(damage)
    damage(slot)
    if user_edits:  # else the snapshot has the pool checkout's tree: no read-tree to refuse
        (big / "app.py").write_text("def a():\n    return 10\n")
    snap = snapshot(big, state, "t1")
    assert take(snap, "t1", wts, ONE) is None
    assert not (wts / "t1").exists()
    assert ready_slots(repo_pool(wts, snap.git_dir)) == []
    fresh = create_worktree(snap, "t1", wts)  # the task goes on with a fresh checkout
    assert worktree_fits(snap, fresh)
    assert (fresh / "app.py").read_bytes() == (big / "app.py").read_bytes()
    # What was discarded waits in the trash (the task did not wait for its removal), and a
    # checkout without a readable record where it was, until the next refill sweeps them.
    sweep(wts)
    assert not slot.exists()
    assert not any((pool_dir(wts) / TRASH).glob("*"))


def test_a_checkout_taken_before_a_crash_is_finished(big: Path, state: Path, wts: Path) -> None:
    warm(big, state, wts)
    (slot,) = ready_slots(repo_pool(wts, big / ".git"))
    (big / "app.py").write_text("changed\n")
    snap = snapshot(big, state, "t1")
    os.rename(slot.path, wts / "t1")  # the broker died right after taking it
    assert (wts / "t1" / ".git" / RECORD).is_file()
    assert take(snap, "t1", wts, ONE) == wts / "t1"
    assert (wts / "t1" / "app.py").read_text() == "changed\n"
    assert worktree_fits(snap, wts / "t1")
    # Once finished it is the task's checkout like any other: prepared again, it is kept.
    assert take(snap, "t1", wts, ONE) is None
    assert create_worktree(snap, "t1", wts) == wts / "t1"


def test_the_pool_keeps_within_its_size_and_disk_cap(
    big: Path, tmp_path: Path, state: Path, wts: Path
) -> None:
    snap = warm(big, state, wts, TWO)
    assert fill(snap.git_dir, snap.commit, wts, TWO) == 0  # full
    one = all_slots(wts)[0].bytes
    assert one > 0
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.txt").write_text("a\n")
    git(other, "init", "-q", "-b", "main")
    git(other, "add", ".")
    git(other, "commit", "-q", "-m", "init")
    osnap = snapshot(other, state, "o1")
    # Room for about two checkouts: the other repository's takes the oldest one's place.
    capped = PoolLimits(size=1, max_bytes=2 * one + one // 2, min_files=1)
    assert fill(osnap.git_dir, osnap.commit, wts, capped) == 1
    slots = all_slots(wts)
    assert sum(s.bytes for s in slots) <= capped.max_bytes
    assert sorted(s.repo for s in slots) == sorted(
        [str((big / ".git").resolve()), str((other / ".git").resolve())]
    )
    # A cap smaller than one checkout: nothing is kept.
    tiny = PoolLimits(size=2, max_bytes=one // 2, min_files=1)
    clear(wts)
    assert fill(snap.git_dir, snap.commit, wts, tiny) == 0
    assert all_slots(wts) == []


def test_baton_clean_removes_the_pool(
    big: Path, state: Path, wts: Path, baton_home: Path, tmp_path: Path
) -> None:
    """``baton clean`` goes through a broker (started on demand, stopped after)."""
    from tests.e2e.test_cli import stop_brokers

    warm(big, state, wts, TWO)
    env = {**os.environ, "BATON_HOME": str(state)}
    try:
        out = subprocess.run(
            [sys.executable, "-m", "baton.cli", "clean", "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
    finally:
        stop_brokers(tmp_path / "run" / "baton")
    answer = json.loads(out)
    assert answer["pool"]["removed"] == 2
    assert answer["pool"]["bytes"] > 0
    assert not pool_dir(wts).exists()
    assert wts.is_dir()


def test_idle_git_runs_at_the_lowest_priority(repo: Path) -> None:
    def niceness() -> int:
        return int(run_git(["-c", "alias.niceness=!nice", "niceness"], repo).strip())

    mine = os.nice(0)
    with idle():
        assert niceness() == max(mine, IDLE_NICE)
    assert niceness() == mine


def test_the_refiller_waits_until_no_task_is_being_prepared(
    big: Path, state: Path, wts: Path
) -> None:
    snap = snapshot(big, state, "t1")
    refills = Refiller(wts, delay=0.05)
    try:
        with refills.preparing():
            refills.ask(snap.git_dir, snap.commit, ONE)
            assert not refills.wait_idle(0.5)  # held while a task is being prepared
            assert all_slots(wts) == []
        assert refills.wait_idle(60)
        (slot,) = all_slots(wts)
        assert slot.commit == snap.commit
    finally:
        refills.close()
    clear(wts)
    refills.ask(snap.git_dir, snap.commit, ONE)  # closed: asked for nothing
    assert refills.wait_idle(1)
    assert all_slots(wts) == []


def test_the_refiller_makes_way_for_a_diff(big: Path, state: Path, wts: Path) -> None:
    from baton.workspace.refill import foreground

    snap = snapshot(big, state, "t1")
    refills = Refiller(wts, delay=0.05)
    try:
        with foreground():  # what compute_diff holds while it stages a result
            refills.ask(snap.git_dir, snap.commit, ONE)
            assert not refills.wait_idle(0.5)
            assert all_slots(wts) == []
        assert refills.wait_idle(60)
        assert len(all_slots(wts)) == 1
    finally:
        refills.close()


async def test_closing_the_broker_stops_its_refills(baton_home: Path, big: Path) -> None:
    sup = Supervisor(baton_home)
    await sup.start()
    await sup.close()
    sup._preparer.refills.ask(big / ".git", "0" * 40, ONE)
    assert sup._preparer.refills._thread is None


async def test_a_broker_takes_from_the_pool_it_refills(
    sup: Supervisor, big: Path, state: Path
) -> None:
    preparer = sup._preparer
    preparer.pool = ONE
    preparer.refills.delay = 0.05
    edit = fake_script({"edit": "notes.txt", "old": "two", "new": "2"})

    async def run() -> str:
        t = await sup.delegate(DelegateRequest(instruction=edit, root=str(big)))
        assert await settle(sup, t.id, timeout=60) == TaskState.REVIEW
        return t.id

    first = await run()
    assert (await sup.get(first)).options["checkout"] == "fresh"
    assert await asyncio.to_thread(preparer.refills.wait_idle, 60)
    second = await run()
    task = await sup.get(second)
    assert task.options["checkout"] == "pool"
    (diff,), _ = await sup.diff(second)
    assert diff.path == "notes.txt"
    await sup.accept(second)
    assert (big / "notes.txt").read_text() == "one\n2\nthree\nfour\nfive\n"
    await preparer.close()


def test_a_claim_beside_the_snapshot_then_its_move_is_the_snapshot_exactly(
    big: Path, state: Path, wts: Path
) -> None:
    warm(big, state, wts)
    (big / "app.py").write_text("def a():\n    return 10\n")
    (big / "pkg" / "m0.py").unlink()
    claimed = claim(big, "t1", wts, ONE)  # before the snapshot, as a task's preparing does
    assert claimed == wts / "t1" and (claimed / ".git" / RECORD).is_file()
    assert ready_slots(repo_pool(wts, big / ".git")) == []
    snap = snapshot(big, state, "t1")
    assert take(snap, "t1", wts, ONE, claimed=claimed) == claimed
    fresh = create_worktree(snapshot(big, state, "f1"), "f1", wts)
    assert files_of(claimed) == files_of(fresh)
    assert not (claimed / ".git" / RECORD).exists()
    assert worktree_fits(snap, claimed)
    assert claim(big, "t1", wts, ONE) is None  # the task's place is taken: nothing to claim
    assert claim(big, "t2", wts, ONE) is None  # and the pool is empty


@pytest.mark.parametrize("what", ["stray", "edit", "ignored"])
def test_a_changed_pool_checkout_is_not_claimed(
    big: Path, state: Path, wts: Path, what: str
) -> None:
    warm(big, state, wts)
    (ready,) = ready_slots(repo_pool(wts, big / ".git"))
    name = {"stray": "stray.txt", "edit": "app.py", "ignored": "debug.log"}[what]
    (ready.path / name).write_text("not Baton's\n")
    assert claim(big, "t1", wts, ONE) is None
    assert not (wts / "t1").exists()
    assert ready_slots(repo_pool(wts, big / ".git")) == []


def test_a_claimed_checkout_left_by_a_crash_is_checked_after_its_move(
    big: Path, state: Path, wts: Path
) -> None:
    warm(big, state, wts)
    claimed = claim(big, "t1", wts, ONE)
    assert claimed is not None
    (claimed / "stray.txt").write_text("written while no broker ran\n")
    snap = snapshot(big, state, "t1")
    assert take(snap, "t1", wts, ONE) is None  # another broker: not claimed by it, checked
    assert not (wts / "t1").exists()


def test_a_small_repository_or_no_pool_claims_nothing(repo: Path, state: Path, wts: Path) -> None:
    snap = snapshot(repo, state, "warmup")
    assert fill(snap.git_dir, snap.commit, wts, ONE) == 1
    assert claim(repo, "t1", wts, PoolLimits(size=1, min_files=1000)) is None
    assert claim(repo, "t1", wts, PoolLimits(size=0, min_files=1)) is None
    assert claim(repo / "no-such-folder", "t1", wts, ONE) is None
    assert not (wts / "t1").exists()
    assert len(ready_slots(repo_pool(wts, snap.git_dir))) == 1


async def test_a_snapshot_that_fails_puts_the_claimed_checkout_out_of_the_way(
    sup: Supervisor, big: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    preparer = sup._preparer
    preparer.pool = ONE
    wts = sup.home / "worktrees"
    snap = snapshot(big, sup.home, "warmup")
    assert fill(snap.git_dir, snap.commit, wts, ONE) == 1

    def failing_snapshot(root: Path, task_id: str, **_: object) -> Snapshot:
        deadline = time.monotonic() + 30
        while not (wts / task_id).exists() and time.monotonic() < deadline:
            time.sleep(0.01)  # the claim beside it took the pool checkout first
        assert (wts / task_id / ".git" / RECORD).is_file()
        raise OSError("no space left for the snapshot")

    monkeypatch.setattr("baton.runtime.prepare.take_snapshot", failing_snapshot)
    edit = fake_script({"edit": "notes.txt", "old": "two", "new": "2"})
    t = await sup.delegate(DelegateRequest(instruction=edit, root=str(big)))
    assert await settle(sup, t.id, timeout=60) == TaskState.FAILED
    assert "no space left" in (await sup.get(t.id)).message
    assert not (wts / t.id).exists()  # discarded, not left where the task would look
    assert ready_slots(repo_pool(wts, snap.git_dir)) == []
    await preparer.close()
