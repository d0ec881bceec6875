"""Code lenses on the hunks of tasks in review: "Accept | Reject" per hunk and
"Accept all | Reject all" per file, so any LSP client can decide hunk by hunk. A hunk that
would conflict with the user's edits says so beforehand and offers "Keep mine | Take
theirs | Ask the agent to redo it" (``baton.resolve``) instead.

Lenses sit where the hunk's lines are now in the document (see :mod:`review`); the server
asks the client to re-query them with ``workspace/codeLens/refresh`` when reviews change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from urllib.parse import unquote

from lsprotocol import types

import baton.surfaces.lsp.placement as placement
from baton.core.diff import HunkState
from baton.core.lifecycle import TaskState

#: Code-action kind of the Accept / Reject actions on hunks.
REVIEW_KIND = "refactor.baton.review"


def _lens(line: int, title: str, command: str, task_id: str, hunks: list[str]) -> types.CodeLens:
    pos = types.Position(line, 0)
    return types.CodeLens(
        range=types.Range(pos, pos),
        command=types.Command(
            title=title, command=command, arguments=[{"taskId": task_id, "hunkIds": hunks}]
        ),
    )


def _resolve(line: int, title: str, task_id: str, hunk: str, choice: str) -> types.CodeLens:
    pos = types.Position(line, 0)
    args = [{"taskId": task_id, "hunkId": hunk, "choice": choice}]
    return types.CodeLens(
        range=types.Range(pos, pos),
        command=types.Command(title=title, command="baton.resolve", arguments=args),
    )


def _conflict_lenses(line: int, task_id: str, hunk: str) -> list[types.CodeLens]:
    """A hunk accept would call a conflict: said beforehand, with the ways to settle it."""
    return [
        _resolve(line, "Conflicts with your edits: Keep mine", task_id, hunk, "mine"),
        _resolve(line, "Take theirs", task_id, hunk, "theirs"),
        _resolve(line, "Ask the agent to redo it", task_id, hunk, "redo"),
    ]


def lenses_for(
    reviews: Iterable[placement.TaskDiff], uri: str, current: str | None, encoding: str
) -> list[types.CodeLens]:
    """The lenses of one document (CPU only: call it off the loop)."""
    out: list[types.CodeLens] = []
    for td in reviews:
        if td.task.state != TaskState.REVIEW:
            continue
        for f in td.files:
            if unquote(td.uri(f)) != unquote(uri):
                continue
            placed = [p for p in placement.place_file(td, f, current, encoding)]
            pending = [p for p in placed if p.hunk.state == HunkState.PENDING]
            if not pending:
                continue
            ids = [p.hunk.id for p in pending]
            label = f"Baton ▸ {td.task.title}"
            if len(pending) > 1:
                title = f"{label}: Accept all ({len(ids)})"
                out.append(_lens(0, title, "baton.accept", td.task.id, ids))
                out.append(_lens(0, "Reject all", "baton.reject", td.task.id, ids))
            for p in pending:
                line = p.range.start.line
                if not p.clean:
                    out += _conflict_lenses(line, td.task.id, p.hunk.id)
                    continue
                tag = " (edited since)" if not p.intact else ""
                out.append(_lens(line, f"Accept{tag}", "baton.accept", td.task.id, [p.hunk.id]))
                out.append(_lens(line, "Reject", "baton.reject", td.task.id, [p.hunk.id]))
    return out


def _overlaps(a: types.Range, start: int, end: int) -> bool:
    """Whether lines ``start``..``end`` (inclusive) meet the range ``a``."""
    return a.start.line <= end and start <= a.end.line


def review_actions(
    reviews: Iterable[placement.TaskDiff],
    uri: str,
    current: str | None,
    encoding: str,
    where: types.Range,
) -> list[types.CodeAction]:
    """Accept / Reject code actions for the pending hunks under ``where`` (clients without
    code lenses, like Helix or eglot, decide hunks through these)."""
    out: list[types.CodeAction] = []
    for td in reviews:
        if td.task.state != TaskState.REVIEW:
            continue
        for f in td.files:
            if unquote(td.uri(f)) != unquote(uri):
                continue
            placed = placement.place_file(td, f, current, encoding)
            pending = [p for p in placed if p.hunk.state == HunkState.PENDING]
            for p in pending:
                last = max(p.range.start.line, p.range.end.line - (p.range.end.character == 0))
                if not _overlaps(where, p.range.start.line, last):
                    continue
                for verb, command in (("Accept", "baton.accept"), ("Reject", "baton.reject")):
                    title = f"Baton: {verb} this change ({td.task.title})"
                    args = [{"taskId": td.task.id, "hunkIds": [p.hunk.id]}]
                    out.append(
                        types.CodeAction(
                            title=title,
                            kind=REVIEW_KIND,
                            command=types.Command(title=title, command=command, arguments=args),
                        )
                    )
            if len(pending) > 1:
                ids = [p.hunk.id for p in pending]
                for verb, command in (("Accept", "baton.accept"), ("Reject", "baton.reject")):
                    title = f"Baton: {verb} all {len(ids)} changes in this file ({td.task.title})"
                    args = [{"taskId": td.task.id, "hunkIds": ids}]
                    out.append(
                        types.CodeAction(
                            title=title,
                            kind=REVIEW_KIND,
                            command=types.Command(title=title, command=command, arguments=args),
                        )
                    )
    return out


async def code_lenses(
    reviews: list[placement.TaskDiff], uri: str, current: str | None, encoding: str
) -> list[types.CodeLens]:
    if not reviews:
        return []
    return await asyncio.to_thread(lenses_for, reviews, uri, current, encoding)
