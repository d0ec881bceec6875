"""Asking the agent to redo a hunk that conflicts with the user's edits.

A redo is one more turn of the same session (the reply path): before it, the lines at
the hunk's place in the agent's checkout become the user's lines as they are now, so the
agent works on what the user sees; its prompt shows the user's text around the hunk and
asks for the change again on it. The task records that text (``task.options["redone"]``):
accept then lets a hunk over those lines replace them while they are still what the agent
was shown (:class:`baton.workspace.Redone`), so a line the user changes afterwards is
still never overwritten.

The redone hunk keeps the id of the hunk it redoes (:func:`keep_redone_ids`): it is the
same change at the same place, so the editors follow it as the hunk they showed, not as a
new one beside a vanished one. Only the redo turn's result does: once its final diff is
stored the id is forgotten (:func:`forget_redone_ids`), so a later turn's hunk there never
takes on a decision made on the redone one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from baton.core.diff import FileDiff, Hunk, HunkState, find_hunk, split_lines
from baton.core.relocate import place
from baton.core.task import Task
from baton.runtime.broker import TaskError
from baton.runtime.recorded import snapshot_of
from baton.workspace import Redone, snapshot_text, worktree_text

#: Lines of the user's text shown on each side of the hunk's place.
AROUND = 12


def redo_prompt(path: str, hunk: Hunk, current: str, first: int, end: int) -> str:
    """The turn's prompt: the user's lines around the hunk, numbered as in their file."""
    lines = split_lines(current)
    lo, hi = max(0, first - AROUND), min(len(lines), end + AROUND)
    shown = "".join(f"{n + 1:>5}  {lines[n]}" for n in range(lo, hi))
    if shown and not shown.endswith("\n"):
        shown += "\n"
    mine = f"lines {first + 1}-{end}" if end > first else f"the place after line {first}"
    was = "".join(split_lines(hunk.new_text)) or "(your change removed these lines)\n"
    return (
        f"The user edited {path} near your change at its lines {hunk.old_start}-"
        f"{hunk.old_start + max(hunk.old_count, 1) - 1}, so it no longer applies. Your "
        f"change there was:\n\n```\n{was}```\n\n"
        f"Here is {path} around it as the user has it now ({mine} are where your change "
        f"goes; your checkout holds the same lines now):\n\n```\n{shown}```\n\n"
        "Redo that change against the user's current lines: keep what the user wrote, "
        f"bring your change in, and change nothing else in {path}."
    )


def prepare_redo(task: Task, f: FileDiff, hunk: Hunk, current: str) -> str:
    """Put the user's lines at ``hunk``'s place into the task's checkout, record them on the
    task, and return the redo turn's prompt (file I/O: call it off the event loop)."""
    if not task.worktree:
        raise ValueError(f"task {task.id} has no checkout to redo the change in")
    checkout = Path(task.worktree) / f.path
    theirs = worktree_text(checkout)
    base = snapshot_text(snapshot_of(task), f.old_path or f.path)
    if base is None or theirs is None:
        raise ValueError(f"{f.path} is not a text file in both the snapshot and the checkout")
    mine_at = place(hunk, base, current)
    theirs_at = place(hunk, base, theirs) if mine_at is not None else None
    if mine_at is None or theirs_at is None:
        raise ValueError(f"hunk {hunk.id} is not a change Baton can place in {f.path}")
    mine, ours = split_lines(current), split_lines(theirs)
    # In the checkout the hunk's new lines stand where its old ones were: replace those.
    start = theirs_at[0]
    stop = min(len(ours), max(start, theirs_at[1]))
    lead = "".join(mine[mine_at[0] : mine_at[1]])
    checkout.write_text(
        "".join(ours[:start]) + lead + "".join(ours[stop:]), encoding="utf-8", newline=""
    )
    redone: dict[str, Any] = dict(task.options.get("redone") or {})
    redone[f.path] = {"text": current, "first": mine_at[0], "end": mine_at[1], "id": hunk.id}
    task.options["redone"] = redone
    return redo_prompt(f.path, hunk, current, *mine_at)


async def redo_turn(
    task: Task, files: Sequence[FileDiff], hunk_id: str, current: str | None
) -> str:
    """The prompt of a turn redoing ``hunk_id`` against ``current`` (the user's text of its
    file; None: the file on disk), with the checkout and ``task.options`` prepared for it."""
    found = find_hunk(files, hunk_id)
    if found is None or found[1].state != HunkState.PENDING:
        raise TaskError(f"task {task.id} has no pending hunk {hunk_id!r}")
    f, hunk = found
    if current is None:
        current = await asyncio.to_thread(worktree_text, snapshot_of(task).root / f.path)
    if current is None:
        raise TaskError(f"{f.path} is not a text file now; there is nothing to redo against")
    try:
        return await asyncio.to_thread(prepare_redo, task, f, hunk, current)
    except (ValueError, OSError) as exc:
        raise TaskError(f"task {task.id}: cannot redo hunk {hunk.id}: {exc}") from None


def redone_of(task: Task) -> dict[str, Redone]:
    """The user's texts the agent was asked to redo hunks against, by path."""
    out: dict[str, Redone] = {}
    for path, rec in (task.options.get("redone") or {}).items():
        if isinstance(rec, dict) and isinstance(rec.get("text"), str):
            out[str(path)] = Redone(rec["text"], int(rec.get("first", 0)), int(rec.get("end", 0)))
    return out


def keep_redone_ids(task: Task, files: Sequence[FileDiff]) -> list[FileDiff]:
    """``files`` with the hunk over each redone place given the id of the hunk it redoes
    (blocking I/O: the snapshot's texts). Only when exactly one hunk of the file is over
    that place and no hunk of the diff has that id already (the agent changed nothing
    there: the old hunk still stands)."""
    wanted = {
        path: str(rec["id"])
        for path, rec in (task.options.get("redone") or {}).items()
        if isinstance(rec, dict) and isinstance(rec.get("id"), str)
    }
    ids = {h.id for f in files for h in f.hunks}
    redone = redone_of(task)
    out = list(files)
    for n, f in enumerate(out):
        hid, where = wanted.get(f.path), redone.get(f.path)
        if hid is None or where is None or hid in ids or not f.hunks:
            continue
        base = snapshot_text(snapshot_of(task), f.old_path or f.path)
        if base is None:
            continue
        over = [h for h in f.hunks if not h.whole_file and where.shown(h, base) is not None]
        if len(over) != 1:
            continue
        hunks = tuple(replace(h, id=hid) if h is over[0] else h for h in f.hunks)
        out[n] = replace(f, hunks=hunks)
        ids.add(hid)
    return out


def forget_redone_ids(task: Task) -> None:
    """The redo turn's final diff is stored: later hunks at those places get their own ids."""
    for rec in (task.options.get("redone") or {}).values():
        if isinstance(rec, dict):
            rec.pop("id", None)
