"""``textDocument/hover``: the proposed text of a pending hunk, before it is accepted.

On a line of a pending hunk of a task in review (for an insertion: the line it goes before)
the hover is the hunk as a diff (its old lines ``-``, its new lines ``+``), the task's
title, and how to decide it: the code actions and the ``baton.accept`` / ``baton.reject``
commands with their argument. On a target line of a task that asks a question, it is the
question and how to reply (see :mod:`asking`). Clients without code lenses or inline
diffs (Helix, eglot, Kate, …) see what they would accept this way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from urllib.parse import unquote

from lsprotocol import types

import baton.surfaces.lsp.asking as asking
import baton.surfaces.lsp.placement as placement
from baton.core.diff import FileDiff, Hunk, HunkState, hunks_meet, split_lines
from baton.core.lifecycle import TaskState
from baton.core.task import Task

#: The most lines of each side a hover shows (the rest is counted).
MAX_LINES = 60


def _side(text: str, mark: str) -> list[str]:
    lines = [line.rstrip("\r\n") for line in split_lines(text)]
    shown = [f"{mark}{line}" for line in lines[:MAX_LINES]]
    if len(lines) > MAX_LINES:
        shown.append(f"{mark}… {len(lines) - MAX_LINES} more lines")
    return shown


def _fence(body: str) -> str:
    """A backtick fence longer than any run of backticks in ``body``."""
    longest, run = 0, 0
    for ch in body:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def also_changed(
    td: placement.TaskDiff, f: FileDiff, hunk: Hunk, reviews: Iterable[placement.TaskDiff]
) -> list[str]:
    """Lines naming the other tasks in review with pending changes to ``f``'s file: those
    whose hunks meet ``hunk`` (both started from the same text of it), and the others."""
    lines = []
    base = td.base.get(f.path)
    for other in reviews:
        if other.task.id == td.task.id or other.task.state != TaskState.REVIEW:
            continue
        for g in other.files:
            pending = [x for x in g.hunks if x.state == HunkState.PENDING]
            if other.root != td.root or g.path != f.path or not pending:
                continue
            same = base is not None and other.base.get(g.path) == base
            meets = [x.id for x in pending if same and hunks_meet(hunk, x)]
            who = f"task `{other.task.id}` ({other.task.title})"
            if meets:
                lines.append(
                    f"*Also changed by {who}: its {', '.join(meets)} changes these lines too.*"
                )
            else:
                lines.append(f"*T{who[1:]} also changes this file.*")
    return lines


def hunk_markdown(td: placement.TaskDiff, p: placement.Placed, also: Sequence[str] = ()) -> str:
    """One pending hunk: the diff, the task, how to accept or reject it; ``also``: lines
    naming other tasks that change the same file."""
    h = p.hunk
    body = "\n".join(_side(h.old_text, "-") + _side(h.new_text, "+"))
    fence = _fence(body)
    arg = json.dumps({"taskId": td.task.id, "hunkIds": [h.id]})
    lines = [f"**Baton ▸ {td.task.title}** — proposed change, pending"]
    if not p.intact:
        lines.append("\n*You edited these lines since: an accept merges, or reports a conflict.*")
    if h.secret:
        lines.append("\n*It writes a secret value (shown masked): accept needs `allowSecret`.*")
    lines += [f"\n{line}" for line in also]
    lines += [
        "",
        f"{fence}diff\n{body}\n{fence}",
        "",
        f'Accept: code action "Baton: Accept this change ({td.task.title})", or the command '
        f"`baton.accept` with `{arg}`.  ",
        f'Reject: "Baton: Reject this change ({td.task.title})", or `baton.reject`.',
    ]
    return "\n".join(lines)


def _covers(p: placement.Placed, line: int) -> bool:
    r = p.range
    last = max(r.start.line, r.end.line - (r.end.character == 0))
    return r.start.line <= line <= last


def hover_text(
    reviews: Sequence[placement.TaskDiff],
    questions: Iterable[Task],
    uri: str,
    current: str | None,
    encoding: str,
    line: int,
) -> str | None:
    """The hover's markdown at ``line`` of ``uri`` (CPU only: call it off the loop)."""
    parts: list[str] = []
    for td in reviews:
        if td.task.state != TaskState.REVIEW:
            continue
        for f in td.files:
            if unquote(td.uri(f)) != unquote(uri):
                continue
            for p in placement.place_file(td, f, current, encoding):
                if p.hunk.state == HunkState.PENDING and _covers(p, line):
                    parts.append(hunk_markdown(td, p, also_changed(td, f, p.hunk, reviews)))
    for task in questions:
        if asking.asks(task) and asking.on_target(task, uri, line, line) is not None:
            parts.append(asking.question_markdown(task))
    return "\n\n---\n\n".join(parts) if parts else None


def markup(text: str, formats: Sequence[types.MarkupKind] | None) -> types.MarkupContent:
    """Markdown, unless the client says it reads only plain text."""
    if formats and types.MarkupKind.Markdown not in formats:
        return types.MarkupContent(kind=types.MarkupKind.PlainText, value=text)
    return types.MarkupContent(kind=types.MarkupKind.Markdown, value=text)
