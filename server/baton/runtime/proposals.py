"""Proposals: an edit another tool proposes, reviewed in the editor like a task's result.

A Claude Code session in a terminal, connected to Baton as its IDE, proposes the whole new
contents of one file and waits for the answer. The broker records the proposal as a task —
a snapshot of the folder with the file as it was, that one file's diff, state ``review`` —
so every surface shows it and decides it hunk by hunk, as usual. Baton itself writes
nothing: once every hunk is decided the proposer gets the final contents (the accepted
hunks merged into the file as it is at that moment, so edits the user saved meanwhile
stay) or a rejection, and writes the file itself.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from baton.core.diff import (
    FileDiff,
    FileStatus,
    Hunk,
    compute_hunks,
    count_lines,
    split_lines,
    whole_file_hunk,
)
from baton.workspace.apply import merge_hunks


@dataclass
class Proposal:
    """A proposal waiting for its decision, held by the broker that received it."""

    task_id: str
    path: str  # relative to the snapshot's root
    file: Path  # absolute
    base: str | None  # the file when proposed; None for a new file
    new: str
    decided: asyncio.Future[str | None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


def proposal_diff(path: str, base: str | None, new: str) -> list[FileDiff]:
    """The diff of one proposed file: a whole-file hunk for a new file, else line hunks."""
    if base is None:
        hunk = whole_file_hunk(path, "", new)
        return [FileDiff(path, FileStatus.ADDED, (hunk,), added=len(split_lines(new)))]
    hunks = compute_hunks(path, base, new)
    if not hunks:
        return []
    added, removed = count_lines(hunks)
    return [FileDiff(path, FileStatus.MODIFIED, hunks, added=added, removed=removed)]


def read_current(file: Path) -> str | None:
    """The file's text now; None when it does not exist (or is not a readable text file)."""
    try:
        return file.read_bytes().decode("utf-8", "surrogateescape")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def final_text(
    proposal: Proposal, accepted: Sequence[Hunk], on_disk: str | None
) -> tuple[str | None, list[tuple[str, str]]]:
    """The file with the ``accepted`` hunks, merged into ``on_disk`` (what the file is now).

    Returns the text (None when nothing could be kept) and ``(hunk id, reason)`` for each
    accepted hunk that no longer fits the file.
    """
    if not accepted:
        return None, []
    if proposal.base is None:  # a new file is taken whole
        if on_disk is not None and on_disk != proposal.new:
            why = f"{proposal.path} was created meanwhile; the proposal would overwrite it"
            return None, [(h.id, why) for h in accepted]
        return proposal.new, []
    if on_disk is None:
        why = f"{proposal.path} was deleted meanwhile"
        return None, [(h.id, why) for h in accepted]
    with tempfile.TemporaryDirectory(prefix="baton-proposal-") as tmp:
        merged, done, conflicts = merge_hunks(proposal.base, on_disk, accepted, Path(tmp))
    return (merged if done else None), conflicts
