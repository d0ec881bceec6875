"""A task's diff as the editor sees it: hunks placed in the current documents.

:class:`TaskDiff` is what the broker says (files and hunks against the snapshot) plus the
snapshot text of each changed file, loaded off the event loop. :func:`place` maps every
hunk onto the text the user has now (the open buffer, or the file on disk) and gives the
``baton/diff`` payload; code lenses and ``baton.diff`` use the same placement.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types

from baton.core.diff import FileDiff, FileStatus, Hunk, HunkState, old_span, split_lines
from baton.core.relocate import applies, place
from baton.core.task import Task
from baton.runtime import Supervisor, redone_of, rewrites, since_last_review
from baton.surfaces.lsp.documents import LineMap, line_range, path_to_uri
from baton.workspace import Snapshot, snapshot_text, worktree_text

#: uri (unquoted, as pygls keys them) → (text, version) of the open documents.
OpenTexts = Mapping[str, tuple[str, int | None]]


@dataclass
class TaskDiff:
    """One task's latest diff, with what is needed to place its hunks."""

    task: Task
    root: Path  # the snapshot root: diff paths are relative to it
    files: list[FileDiff]
    final: bool
    base: dict[str, str | None] = field(default_factory=dict)  # path → snapshot text

    def uri(self, f: FileDiff) -> str:
        return path_to_uri(self.root / f.path)

    def pending(self) -> int:
        return sum(1 for f in self.files for h in f.hunks if h.state == HunkState.PENDING)


@dataclass(frozen=True, slots=True)
class Placed:
    """A hunk and where it is in the current document."""

    hunk: Hunk
    range: types.Range
    intact: bool  # False: the user changed these lines since the snapshot
    clean: bool = True  # False: accept would call it a conflict with the user's edits


def snapshot_root(task: Task) -> Path | None:
    data = task.options.get("snapshot")
    if not isinstance(data, dict):
        return None
    return Snapshot.from_json(data).root


def _is_text_change(f: FileDiff) -> bool:
    return f.status == FileStatus.MODIFIED and not f.binary


async def load(sup: Supervisor, task_id: str) -> TaskDiff | None:
    """The task's diff and snapshot texts (git runs on a worker thread); None without one."""
    task = await sup.get(task_id)
    data = task.options.get("snapshot")
    if not isinstance(data, dict):
        return None
    files, final = await sup.diff(task.id)
    snap = Snapshot.from_json(data)

    def base_texts() -> dict[str, str | None]:
        return {
            f.path: snapshot_text(snap, f.old_path or f.path)
            for f in files
            if _is_text_change(f) and not all(h.whole_file for h in f.hunks)
        }

    base = await asyncio.to_thread(base_texts)
    return TaskDiff(task, snap.root, files, final, base)


def place_file(td: TaskDiff, f: FileDiff, current: str | None, encoding: str) -> list[Placed]:
    """Where each hunk of ``f`` is in ``current`` (the snapshot text when None)."""
    base = td.base.get(f.path)
    if base is None:
        origin = types.Range(types.Position(0, 0), types.Position(0, 0))
        return [Placed(h, origin, True) for h in f.hunks]
    old_lines = split_lines(base)
    new_lines = old_lines if current is None else split_lines(current)
    lmap = LineMap(old_lines, new_lines)
    redone = redone_of(td.task).get(f.path)
    over = rewrites(td.task, [f], td.base)  # revised hunks over lines accepted before
    out = []
    for h in f.hunks:
        start, count = old_span(h)
        if h.whole_file:
            start, count = 0, len(old_lines)
        nstart, ncount, intact = lmap.span(start, count)
        clean = current is None or h.whole_file or applies(h, base, current)
        if not clean and redone is not None and current is not None:
            clean = redone.covers(h, base, current)  # redone against these very lines
        accepted = over.get(h.id)
        where = place(h, base, current) if accepted is not None and current is not None else None
        if where is not None and "".join(new_lines[where[0] : where[1]]) == accepted:
            # a change of the accepted lines the user has: shown against those lines
            h = replace(h, old_text=accepted)
            nstart, ncount, intact, clean = where[0], where[1] - where[0], True, True
        out.append(Placed(h, line_range(new_lines, nstart, ncount, encoding), intact, clean))
    return out


def findings_by_uri(
    td: TaskDiff, open_texts: OpenTexts, disk: Mapping[str, str | None], encoding: str
) -> dict[str, list[types.Diagnostic]]:
    """The independent review's findings as diagnostics in the documents the user has now.

    A finding names a line of the proposed file. On a line a hunk adds, it sits on that
    hunk's place in the current document; elsewhere, on the line it came from.
    """
    result = td.task.options.get("review_result")
    if not isinstance(result, dict) or not result.get("findings"):
        return {}
    by_path = {f.path: f for f in td.files}
    reviewer = str(result.get("worker", "reviewer"))
    out: dict[str, list[types.Diagnostic]] = {}
    for raw in result["findings"]:
        if not isinstance(raw, dict):
            continue
        f = by_path.get(str(raw.get("path", "")))
        if f is None:
            continue
        uri = td.uri(f)
        opened = open_texts.get(unquote(uri))
        current = opened[0] if opened is not None else disk.get(f.path)
        where = _finding_range(td, f, current, encoding, int(raw.get("line", 1) or 1))
        severity = _SEVERITY.get(str(raw.get("severity")), types.DiagnosticSeverity.Warning)
        out.setdefault(uri, []).append(
            types.Diagnostic(
                range=where,
                message=f"{raw.get('message', '')} (review of the proposed change by {reviewer})",
                severity=severity,
                source="baton review",
                code=td.task.id,
            )
        )
    return out


_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}


def _finding_range(
    td: TaskDiff, f: FileDiff, current: str | None, encoding: str, line: int
) -> types.Range:
    placed = place_file(td, f, current, encoding)
    shift = 0  # proposed lines minus snapshot lines, for hunks above the finding
    for p in placed:
        h = p.hunk
        first = h.new_start if h.new_count else h.new_start + 1
        if h.whole_file or first <= line < first + max(h.new_count, 1):
            return p.range
        if first + h.new_count <= line:
            shift += h.new_count - h.old_count
    base = td.base.get(f.path)
    old_lines = split_lines(base or "")
    new_lines = old_lines if current is None else split_lines(current)
    old = min(max(line - 1 - shift, 0), max(len(old_lines) - 1, 0))
    now = LineMap(old_lines, new_lines).line(old)
    return line_range(new_lines, now if now is not None else 0, 1, encoding)


def current_texts(td: TaskDiff, open_texts: OpenTexts) -> dict[str, str | None]:
    """The text the user has now of each changed file not open in the editor (disk I/O)."""
    out: dict[str, str | None] = {}
    for f in td.files:
        if unquote(td.uri(f)) not in open_texts and f.path in td.base:
            out[f.path] = worktree_text(td.root / f.path)
    return out


def payload(
    td: TaskDiff,
    open_texts: OpenTexts,
    disk: Mapping[str, str | None],
    encoding: str,
) -> dict[str, Any]:
    """The ``baton/diff`` notification for one task (CPU only: call it off the loop)."""
    since = since_last_review(td.task, td.files) if td.final else None
    revised = set(since.new) if since is not None else set()
    files = []
    for f in td.files:
        uri = td.uri(f)
        opened = open_texts.get(unquote(uri))
        current = opened[0] if opened is not None else disk.get(f.path)
        hunks = []
        for p in place_file(td, f, current, encoding):
            hunk: dict[str, Any] = {
                "id": p.hunk.id,
                "range": _range_json(p.range),
                "oldText": p.hunk.old_text,
                "newText": p.hunk.new_text,
                "state": str(p.hunk.state),
                "stale": not p.intact,
                "conflict": not p.clean,
                "wholeFile": p.hunk.whole_file,
            }
            if p.hunk.secret:
                hunk["secret"] = True  # masked; baton.accept takes it only with allowSecret
            if p.hunk.id in revised:
                hunk["revised"] = True  # new since the last review (an interdiff)
            hunks.append(hunk)
        files.append(
            {
                "uri": uri,
                "path": f.path,
                "oldPath": f.old_path,
                "status": str(f.status),
                "binary": f.binary,
                "version": opened[1] if opened is not None else None,
                "hunks": hunks,
            }
        )
    out = {
        "taskId": td.task.id,
        "title": td.task.title,
        "state": str(td.task.state),
        "final": td.final,
        "files": files,
    }
    if since is not None:
        out["revision"] = since.to_json()  # the turn, and new/kept/dropped hunk ids
    return out


def _range_json(r: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": r.start.line, "character": r.start.character},
        "end": {"line": r.end.line, "character": r.end.character},
    }
