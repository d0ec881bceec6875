"""Checkpoints: each reviewed turn's result of a task, kept so the review can step back.

When a task in review is sent back to its agent (a revision), the result the user reviewed
(the commit ``refs/baton/results/<id>`` points at) is kept as
``refs/baton/turns/<turn>/<id>`` in the user's repository, beside Baton's other refs (the
task id last, as the sweep of orphaned refs reads it). Stepping back puts the files of an
earlier turn's result into the task's checkout (:func:`restore_turn`: only what differs from
that result is written or removed, ignored files are left alone); the diff is then computed
again as after any turn. The refs go with the task's other refs when it is cleaned up.
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from baton.workspace.checkout import SCRATCH_PREFIX, seed_index_of
from baton.workspace.diffing import stage_checkout
from baton.workspace.git import GitError, run_git
from baton.workspace.snapshot import Snapshot

TURN_REF = "refs/baton/turns/"


def turn_ref(task_id: str, turn: int) -> str:
    return f"{TURN_REF}{turn}/{task_id}"


def keep_turn(snap: Snapshot, turn: int) -> str | None:
    """Keep the task's current result commit as ``turn``'s checkpoint; its sha (None: the
    task has no result yet)."""
    try:
        commit = run_git(
            ["rev-parse", "--verify", "--quiet", snap.result_ref + "^{commit}"],
            snap.git_dir,
            git_dir=snap.git_dir,
        ).strip()
    except GitError:
        return None
    if not commit:
        return None
    ref = turn_ref(snap.task_id, turn)
    run_git(["update-ref", ref, commit], snap.git_dir, git_dir=snap.git_dir)
    return commit


def turns(git_dir: Path, task_id: str) -> dict[int, str]:
    """The task's checkpoints: turn → result commit."""
    try:
        out = run_git(
            ["for-each-ref", "--format=%(refname) %(objectname)", TURN_REF],
            git_dir,
            git_dir=git_dir,
        )
    except GitError:
        return {}
    found: dict[int, str] = {}
    for line in out.splitlines():
        ref, _, sha = line.partition(" ")
        turn, _, tid = ref.removeprefix(TURN_REF).partition("/")
        if tid == task_id and turn.isdigit():
            found[int(turn)] = sha
    return dict(sorted(found.items()))


def delete_turns(git_dir: Path, task_id: str) -> None:
    """Remove the task's checkpoints (it is settled). Idempotent."""
    refs = [turn_ref(task_id, t) for t in turns(git_dir, task_id)]
    if refs:
        with contextlib.suppress(GitError):
            run_git(
                ["update-ref", "--stdin"],
                git_dir,
                git_dir=git_dir,
                input="".join(f"delete {ref}\n" for ref in refs),
            )


def restore_turn(snap: Snapshot, worktree: Path, commit: str) -> None:
    """Make the files of ``worktree`` those of the result ``commit``: from an index of what
    the checkout holds now, git switches to that tree, writing the files that differ and
    removing those it does not have; files it never tracked (ignored ones) stay."""
    current = stage_checkout(snap, worktree)
    seed = seed_index_of(worktree)
    scratch = seed.parent if seed.parent.is_dir() else None
    with tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX, dir=scratch) as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        for args in (["read-tree", current], ["read-tree", "--reset", "-u", commit]):
            run_git(args, worktree, git_dir=snap.git_dir, work_tree=worktree, env=env)
