"""Checkout repositories made ahead of need: a task's checkout made in one is the checkout
made without; a dead broker's are swept."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from baton.workspace import create_worktree, skeleton, take_snapshot
from baton.workspace.worktree import worktree_fits
from tests.conftest import git


def _ready(worktrees: Path, within: float = 30.0) -> list[Path]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with skeleton._lock:
            found = list(skeleton._ready.get(worktrees, []))
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError("no skeleton was made")


def _git_files(checkout: Path) -> dict[str, str]:
    own = checkout / ".git"
    names = ["HEAD", "config", "objects/info/alternates", "info/attributes"]
    return {n: (own / n).read_text() for n in names}


def test_a_checkout_in_a_skeleton_is_the_checkout_made_without(repo: Path, tmp_path: Path) -> None:
    git(repo, "config", "user.name", "Some One")
    git(repo, "config", "user.email", "one@example.com")
    wts = tmp_path / "wts"
    first = create_worktree(take_snapshot(repo, "t1", state_home=tmp_path / "h"), "t1", wts)
    made = _ready(wts / ".index")  # asked for by the first checkout
    assert made[0].name.startswith(f".skeleton-{os.getpid()}-")
    snap = take_snapshot(repo, "t2", state_home=tmp_path / "h")
    second = create_worktree(snap, "t2", wts)
    assert not made[0].exists()  # taken: renamed to the task's place
    assert _git_files(second) == {
        k: v.replace("baton/t1", "baton/t2") for k, v in _git_files(first).items()
    }
    assert "one@example.com" in (second / ".git" / "config").read_text()
    out = subprocess.run(
        ["git", "status", "--porcelain", "--ignored", "--untracked-files=all"],
        cwd=second, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert out == "" and worktree_fits(snap, second)
    _ready(wts / ".index")  # and the next one is on its way


def test_a_dead_brokers_skeletons_are_swept_and_ours_kept(tmp_path: Path) -> None:
    wts = tmp_path / "wts"
    wts.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    theirs = wts / f"{skeleton.PREFIX}{dead.pid}-abc"
    (theirs / ".git").mkdir(parents=True)
    (wts / f"{skeleton.PREFIX}{dead.pid}-def-making").mkdir()
    ours = wts / f"{skeleton.PREFIX}{os.getpid()}-abc"
    (ours / ".git").mkdir(parents=True)
    assert skeleton.sweep_skeletons(wts) == 2
    assert ours.exists() and not theirs.exists()


def test_no_skeleton_ready_and_the_checkout_is_made_anyway(repo: Path, tmp_path: Path) -> None:
    wts = tmp_path / "wts"
    ahead = wts / ".index"
    assert not skeleton.take_skeleton(ahead, wts / "t9", "baton/t9")
    assert not (wts / "t9").exists()
    _ready(ahead)  # asked for
    (wts / "t9").mkdir()  # something in the way: the skeleton is not put over it
    assert not skeleton.take_skeleton(ahead, wts / "t9", "baton/t9")
    assert not any((wts / "t9").iterdir())
