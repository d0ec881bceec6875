"""One writer per file, across tasks: live tasks whose changes touch the same file know of
each other, and a task's pending hunks are judged against the file as it is now.

- :func:`overlaps`: for a task's diff, the other live tasks (running, asking or in review,
  in the same project) with pending changes to the same files, and which hunks meet —
  their snapshot lines overlap, or one inserts where the other changes. Lines compare only
  when both tasks started from the same text of the file; else only the file is named.
- :func:`standing`: for each pending hunk of a file the user's copy of which is no longer
  the snapshot's (another task's accept, or the user's own edit), whether accept can still
  bring it in and where it now stands — the re-based place — or that it now conflicts.
- :func:`tell_overlapping`: after an accept wrote files, each other live task with pending
  hunks in them gets a log event saying so, hunk by hunk: nothing changes under a task
  silently. Its hunks stay pending; accepting it later merges them into the new text, and
  a conflicting one is refused as a conflict, never written over the other task's lines.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.core.diff import FileDiff, FileStatus, Hunk, HunkState, hunks_meet, with_states
from baton.core.lifecycle import TaskState
from baton.core.relocate import applies, place
from baton.core.task import Task
from baton.runtime.book import Book
from baton.runtime.recorded import has_snapshot, snapshot_of
from baton.store import Store
from baton.workspace import snapshot_text
from baton.workspace.diffing import worktree_text
from baton.workspace.git import in_background

S = TaskState
#: The states of a task whose pending changes may still reach the user's files.
LIVE = (S.RUNNING, S.NEEDS_INPUT, S.VERIFYING, S.REVIEW, S.RATE_LIMITED)


@dataclass
class Overlap:
    """Another live task that changes ``path`` too; ``hunks``: ``(mine, theirs)`` pairs
    that meet, when both tasks started from the same text of the file (``comparable``)."""

    path: str
    task: str
    title: str
    state: str
    comparable: bool
    hunks: list[tuple[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path, "task": self.task, "title": self.title, "state": self.state,
        }  # fmt: skip
        if self.comparable:
            out["hunks"] = [list(pair) for pair in self.hunks]
        return out


@dataclass
class Standing:
    """Where a pending hunk stands in the user's file now: ``line`` (1-based) of its place,
    and whether accept can bring it in (``applies``; if not, ``why``)."""

    applies: bool
    line: int | None
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"applies": self.applies, "line": self.line}
        if self.why:
            out["why"] = self.why
        return out


def _pending(f: FileDiff) -> list[Hunk]:
    return [h for h in f.hunks if h.state == HunkState.PENDING]


def _base(task: Task, path: str) -> str | None:
    return snapshot_text(snapshot_of(task), path) if has_snapshot(task) else None


def _overlaps(
    task: Task, files: Sequence[FileDiff], others: Iterable[tuple[Task, list[FileDiff]]]
) -> list[Overlap]:
    mine = {f.path: f for f in files if _pending(f)}
    found: list[Overlap] = []
    for other, theirs in others:
        for f in theirs:
            if f.path not in mine or not _pending(f):
                continue
            base, other_base = _base(task, f.path), _base(other, f.path)
            comparable = base is not None and base == other_base
            over = Overlap(f.path, other.id, other.title, str(other.state), comparable)
            if comparable:
                over.hunks = [
                    (a.id, b.id)
                    for a in _pending(mine[f.path])
                    for b in _pending(f)
                    if hunks_meet(a, b)
                ]
            found.append(over)
    return found


async def _live_others(book: Book, task: Task) -> list[tuple[Task, list[FileDiff]]]:
    states = [str(s) for s in LIVE]

    def read(s: Store) -> list[tuple[Task, list[FileDiff]]]:
        out = []
        for t in s.list_tasks(states=states, root=task.root, limit=None):
            diff = s.load_diff(t.id) if t.id != task.id else None
            if diff is not None:
                out.append((t, with_states(diff[0], s.hunk_states(t.id))))
        return out

    found: list[tuple[Task, list[FileDiff]]] = await book.store.call(read)
    return found


async def overlaps(book: Book, task: Task, files: Sequence[FileDiff]) -> list[Overlap]:
    """The other live tasks with pending changes to the files ``task`` changes."""
    if not any(_pending(f) for f in files):
        return []
    others = await _live_others(book, task)
    return await asyncio.to_thread(in_background, _overlaps, task, files, others)


def _standing(
    task: Task, files: Sequence[FileDiff], texts: Mapping[str, str | None] | None = None
) -> dict[str, Standing]:
    """As :func:`standing`; ``texts``: the user's text of some files, instead of the disk's."""
    out: dict[str, Standing] = {}
    root = Path(snapshot_of(task).root)
    for f in files:
        hunks = _pending(f)
        if not hunks or f.binary or f.status is not FileStatus.MODIFIED:
            continue
        given = texts is not None and f.path in texts
        now = texts[f.path] if texts is not None and given else worktree_text(root / f.path)
        base = _base(task, f.path)
        if base is None or now is None or now == base:
            continue
        for h in hunks:
            where = place(h, base, now)
            line = where[0] + 1 if where is not None else None
            if applies(h, base, now):
                out[h.id] = Standing(True, line)
            else:
                why = "your copy of the file changed these lines since the task started"
                out[h.id] = Standing(False, line, why)
    return out


async def standing(task: Task, files: Sequence[FileDiff]) -> dict[str, Standing]:
    """Each pending hunk of a file that changed on disk since the snapshot: can it still be
    accepted, and where does its place stand now."""
    if not has_snapshot(task) or not any(_pending(f) for f in files):
        return {}
    return await asyncio.to_thread(in_background, _standing, task, files)


async def diff_notes(book: Book, task: Task, files: Sequence[FileDiff]) -> dict[str, Any]:
    """What a diff answer adds when it applies: ``overlaps`` (:func:`overlaps`) and
    ``standing`` (:func:`standing`), each left out when empty."""
    found = await overlaps(book, task, files)
    stands = await standing(task, files)
    notes: dict[str, Any] = {}
    if found:
        notes["overlaps"] = [o.to_json() for o in found]
    if stands:
        notes["standing"] = {h: s.to_json() for h, s in stands.items()}
    return notes


async def tell_overlapping(book: Book, task: Task, texts: Mapping[str, str | None]) -> list[str]:
    """After ``task``'s accept gave files the ``texts`` (path → new text; None: deleted):
    a log event on every other live task with pending hunks there, saying which still apply
    (and where) and which now conflict. Returns the ids told."""
    written = set(texts)
    if not written:
        return []
    told = []
    for other, files in await _live_others(book, task):
        touched = [f for f in files if f.path in written and _pending(f)]
        if not touched or not has_snapshot(other):
            continue
        now = await asyncio.to_thread(in_background, _standing, other, touched, texts)
        for f in touched:
            parts = []
            for h in _pending(f):
                s = now.get(h.id)
                if s is None:
                    continue
                at = f" (now at line {s.line})" if s.line else ""
                parts.append(f"{h.id} still applies{at}" if s.applies else f"{h.id} conflicts")
            said = "; ".join(parts) or "its hunks there are unchanged"
            await book.log(
                other,
                f"task {task.id} ({task.title}) was accepted into {f.path}: {said}",
                "info" if all(s.applies for s in now.values()) else "warning",
            )
        told.append(other.id)
    return told
