"""The worker's change: a task's worktree compared with its snapshot, as FileDiffs.

Everything in the worktree counts — commits the worker made, uncommitted edits and new
untracked files: what is on disk. The worktree is staged against the snapshot's repository
into a temporary index seeded from Baton's own (the checkout's repository, the agent's, is
never used), the tree is recorded as ``refs/baton/results/<task id>`` and compared with the
snapshot's tree by ``git diff-tree``; modified text files are split into hunks, while
added, deleted, renamed, binary and type-changed files are one whole-file hunk each.
:func:`result_diff` reads the same diff back from that ref alone.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baton.core.diff import (
    FileDiff,
    FileStatus,
    Hunk,
    compute_hunks,
    count_lines,
    whole_file_hunk,
)
from baton.workspace.checkout import SCRATCH_PREFIX, seed_index_of
from baton.workspace.git import common_dir_of, git_process, read_blobs, run_git, split_z
from baton.workspace.objects import commit_tree, write_tree
from baton.workspace.refill import foreground
from baton.workspace.refs import update_ref
from baton.workspace.snapshot import Snapshot, stage_work_tree

NULL_SHA = "0" * 40
SYMLINK = "120000"
GITLINK = "160000"


def decode_text(data: bytes) -> str | None:
    """``data`` as text, or None when it looks binary (NUL in the first 8 KiB, not UTF-8)."""
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def snapshot_bytes(snap: Snapshot, path: str) -> bytes | None:
    """The bytes of ``path`` in the snapshot, or None when it has no such file."""
    proc = git_process(
        ["cat-file", "blob", f"{snap.commit}:{path}"],
        snap.git_dir,
        git_dir=snap.git_dir,
        ok_codes=(0, 128),
    )
    return proc.stdout if proc.returncode == 0 else None


def snapshot_text(snap: Snapshot, path: str) -> str | None:
    """The text of ``path`` in the snapshot; None when missing or binary."""
    data = snapshot_bytes(snap, path)
    return None if data is None else decode_text(data)


def worktree_text(path: Path) -> str | None:
    """The text of a file on disk (line endings kept); None when missing or binary."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    return decode_text(data)


@dataclass(frozen=True, slots=True)
class _Change:
    status: str
    old_mode: str
    new_mode: str
    old_sha: str
    new_sha: str
    path: str
    old_path: str | None


def _parse_raw(out: str) -> list[_Change]:
    fields = split_z(out)
    changes: list[_Change] = []
    i = 0
    while i < len(fields):
        meta = fields[i].lstrip(":").split(" ")
        old_mode, new_mode, old_sha, new_sha, status = meta[:5]
        letter = status[0]
        if letter in "RC":
            old_path, path = fields[i + 1], fields[i + 2]
            i += 3
        else:
            old_path, path = None, fields[i + 1]
            i += 2
        changes.append(_Change(letter, old_mode, new_mode, old_sha, new_sha, path, old_path))
    return changes


def stage_checkout(snap: Snapshot, worktree: Path) -> str:
    """Record everything in ``worktree`` as a tree in the snapshot's repository; its sha.

    Git runs with the snapshot's git directory and Baton's own index of the checkout
    (:func:`~baton.workspace.checkout.seed_index_of`, kept for its stat data), never with the
    checkout's own repository, whose config and index are the agent's.
    """
    seed = seed_index_of(worktree)
    scratch = seed.parent if seed.parent.is_dir() else None
    with tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX, dir=scratch) as tmp:
        index = Path(tmp) / "index"
        stage_work_tree(
            worktree,
            index,
            seed_index=seed,
            seed_tree=snap.commit,
            git_dir=snap.git_dir,
            work_tree=worktree,
            common_dir=common_dir_of(snap.git_dir),
        )
        tree = write_tree(worktree, snap.git_dir, index)
        if scratch is not None:
            os.replace(index, seed)
    return tree


def stage_result(snap: Snapshot, worktree: Path) -> str:
    """Stage ``worktree`` (:func:`stage_checkout`), point the result ref at it; the tree."""
    tree = stage_checkout(snap, worktree)
    message = f"Baton result of task {snap.task_id}"
    commit = commit_tree(worktree, snap.git_dir, tree, [snap.commit], message)
    if snap.task_id:
        update_ref(snap.git_dir, snap.result_ref, commit)
    return tree


def _file_diff(change: _Change, blobs: dict[str, bytes]) -> FileDiff | None:
    old = blobs.get(change.old_sha, b"") if change.old_sha != NULL_SHA else b""
    new = blobs.get(change.new_sha, b"") if change.new_sha != NULL_SHA else b""
    old_text, new_text = decode_text(old), decode_text(new)
    binary = old_text is None or new_text is None
    extra: dict[str, Any] = {
        "oldBlob": None if change.old_sha == NULL_SHA else change.old_sha,
        "newBlob": None if change.new_sha == NULL_SHA else change.new_sha,
        "oldMode": None if change.old_mode == "000000" else change.old_mode,
        "newMode": None if change.new_mode == "000000" else change.new_mode,
    }
    path = change.path
    tag = f"binary {change.old_sha} {change.new_sha}" if binary else ""
    ot, nt = ("", "") if binary else (old_text or "", new_text or "")
    hunks: tuple[Hunk, ...]
    if change.status == "A":
        status, hunks = FileStatus.ADDED, (whole_file_hunk(path, ot, nt, tag=tag),)
    elif change.status == "D":
        status, hunks = FileStatus.DELETED, (whole_file_hunk(path, ot, nt, tag=tag),)
    elif change.status in "RC":
        tag = f"rename {change.old_path} {change.old_sha} {change.new_sha}"
        status, hunks = FileStatus.RENAMED, (whole_file_hunk(path, ot, nt, tag=tag),)
    else:  # M or T
        if change.old_sha == change.new_sha:
            return None  # only the mode changed
        status = FileStatus.MODIFIED
        if change.status == "T" or SYMLINK in (change.old_mode, change.new_mode):
            extra["typeChange"] = change.status == "T"
            tag = tag or f"replace {change.old_sha} {change.new_sha}"
            hunks = (whole_file_hunk(path, ot, nt, tag=tag),)
        elif binary:
            hunks = (whole_file_hunk(path, ot, nt, tag=tag),)
        else:
            hunks = compute_hunks(path, ot, nt)
            if not hunks:
                return None
    added, removed = (0, 0) if binary else count_lines(hunks)
    if change.status == "A" and not binary:
        removed = 0
    return FileDiff(
        path=path,
        status=status,
        hunks=hunks,
        old_path=change.old_path if status is FileStatus.RENAMED else None,
        binary=binary,
        added=added,
        removed=removed,
        extra=extra,
    )


def compute_diff(snap: Snapshot, worktree: Path) -> list[FileDiff]:
    """What the worker changed in ``worktree`` against the snapshot, sorted by path."""
    with foreground():  # the pool's refills make way
        tree = stage_result(snap, worktree)
    return _diff_trees(snap.commit, tree, worktree, snap.git_dir)


def result_diff(snap: Snapshot) -> list[FileDiff]:
    """The diff :func:`compute_diff` last recorded, read back from git alone: the snapshot
    against the result ref (the worktree is not looked at; it may be gone)."""
    return _diff_trees(snap.commit, snap.result_ref, snap.git_dir, snap.git_dir)


def _diff_trees(old: str, new: str, cwd: Path, git_dir: Path | None) -> list[FileDiff]:
    raw = run_git(["diff-tree", "-r", "-z", "-M", "--raw", old, new], cwd, git_dir=git_dir)
    changes = [
        c for c in _parse_raw(raw) if GITLINK not in (c.old_mode, c.new_mode) and c.status != "U"
    ]
    shas = [s for c in changes for s in (c.old_sha, c.new_sha) if s != NULL_SHA]
    blobs = read_blobs(cwd, shas, git_dir=git_dir)
    files = [f for c in changes if (f := _file_diff(c, blobs)) is not None]
    return sorted(files, key=lambda f: f.path)
