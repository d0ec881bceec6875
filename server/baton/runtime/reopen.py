"""Undo and redo of accepted hunks, as decisions: what the user's text holds at each hunk.

An editor's undo takes an accepted hunk back out of the document; the record must follow,
or the task ends ``applied`` with none of its change in the file. So a client that sees the
document hold a hunk's old lines again asks for a *reopen*, and one that sees them hold its
new lines again (a redo) asks for a *reaccept*. The broker never takes the client's word
for it: it reads the text the user has (the editor's buffer, else the file) and decides
only the hunks whose place holds that side (:mod:`baton.core.held`). Neither decision
writes a user file: the editor already changed it.

This module is the reading part (git and disk, on a worker thread); the decisions
themselves are stored by :class:`baton.runtime.decisions.Decisions`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from baton.core.diff import FileDiff, FileStatus, apply_hunks
from baton.core.held import Placement, Side
from baton.workspace import GitError, Snapshot, run_git, snapshot_text, worktree_text
from baton.workspace.git import git_process

#: Why a hunk stays as it was, by the side its place holds (None: neither).
KEPT_REASONS: dict[Side | None, str] = {
    Side.OLD: "your text does not hold its new lines at its place",
    Side.NEW: "your text still holds its new lines at its place",
    None: "your text at its place is neither its old nor its new lines",
}


@dataclass
class Redecided:
    """What a reopen or a reaccept did: hunk ids decided, and ``(id, reason)`` kept."""

    decided: list[str] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)


def sides(
    snap: Snapshot, files: Sequence[FileDiff], ids: Collection[str], current: Mapping[str, str]
) -> dict[str, Side | None]:
    """The side of each hunk in ``ids`` that the user's text holds now (blocking I/O).

    The user's text is ``current[path]`` (an open editor buffer), else the file on disk.
    Only line hunks of modified text files have a place; any other hunk gets None.
    Raises :class:`LookupError` when git no longer has the snapshot commit.
    """
    if git_process(
        ["cat-file", "-e", f"{snap.commit}^{{commit}}"],
        snap.git_dir,
        git_dir=snap.git_dir,
        ok_codes=(0, 1, 128),
    ).returncode:
        raise LookupError(snap.commit)
    out: dict[str, Side | None] = {}
    for f in files:
        wanted = [h for h in f.hunks if h.id in ids]
        if not wanted:
            continue
        out.update(dict.fromkeys((h.id for h in wanted), None))
        if f.status != FileStatus.MODIFIED or f.binary or any(h.whole_file for h in f.hunks):
            continue
        base = snapshot_text(snap, f.old_path or f.path)
        text = current.get(f.path)
        if text is None:
            text = worktree_text(snap.root / f.path)
        if base is None or text is None:
            continue
        try:
            result = apply_hunks(base, f.hunks)
        except ValueError:  # the stored diff is not of this snapshot
            continue
        placement = Placement(base, result, text)
        out.update({h.id: placement.held(h) for h in wanted})
    return out


def keep_snapshot(snap: Snapshot) -> bool:
    """Point the task's snapshot ref at its commit again (an applied task's was removed);
    False when git no longer has the commit. Safe to repeat."""
    try:
        run_git(["update-ref", snap.ref, snap.commit], snap.git_dir, git_dir=snap.git_dir)
    except GitError:
        return False
    return True
