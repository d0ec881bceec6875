"""Answers sized for a context window: what the websocket, ``--json`` and MCP tools return.

A lead agent pays for every character it reads, on every later step. So an answer holds a
task once, leaves out nulls, empty fields and what the state already says (``completion``
``completed`` on a settled line, ``message`` "ready for review" in ``review``), and cuts long
text with a marker that names how to get the rest. Every task line carries ``next``.

The shapes, built from the domain objects (pure, no I/O):

- :func:`line` — ``{id, state, completion?, message?, next}``, what a move answers with;
- :func:`woke` — the line ``watch`` answers with when a task settles or hits a rate limit:
  the line plus the summary's first line and, when rate limited, ``retryIn`` seconds;
- :func:`short` — ``inspect``'s default: state, completion, summary line, counts, ``next``
  (no id: the caller named the task);
- :func:`details` — the sections ``inspect`` adds on request (:data:`DETAILS`);
- :func:`diff_text` — a diff as unified text with hunk ids, cut and continued by ``offset``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from baton.core import usage
from baton.core.diff import FileDiff, HunkState, count_lines
from baton.core.events import Event, EventType
from baton.core.lifecycle import SETTLED, Completion, TaskState
from baton.core.task import Attempt, Task, next_moves

S = TaskState

#: States in which a task no longer needs its agent: a watch that finds one there returns.
STOP: frozenset[str] = frozenset(str(s) for s in (*SETTLED, S.REVIEW, S.NEEDS_INPUT))
#: What wakes a watch when it happens while the watch waits: a stop, or a rate limit (the
#: task holds until the limit resets, then runs again by itself; the watcher is told).
WAKES: frozenset[str] = STOP | {str(S.RATE_LIMITED)}

#: Characters of a summary's or title's first line kept in a short answer.
SUMMARY_LINE = 160
TITLE_LINE = 80
#: Characters of a task's message kept in a line.
MESSAGE_LINE = 300
#: Characters of diff text in one answer; ``offset`` pages on.
DIFF_PAGE = 20_000

#: Sections ``inspect`` adds when asked (``detail``), or all of them with ``"all"``.
DETAILS = ("attempts", "events", "evidence", "brief", "summary", "task")

#: A message that only repeats what the state says.
_IMPLIED = {
    S.REVIEW: "ready for review",
    S.ANSWERED: "no changes",
    S.APPLIED: "accepted",
    S.REJECTED: "rejected",
    S.CANCELLED: "cancelled by the user",
}
#: Fields of the task record left out of the ``task`` section: each has a section of its own
#: (brief, summary), is the caller's own text (instruction), or is internal.
_NOT_IN_TASK = ("instruction", "brief", "summary", "options")
#: Fields of an attempt that are Baton's bookkeeping, not the attempt's story.
_NOT_IN_ATTEMPT = ("task_id", "out_path", "err_path", "exit_path", "out_offset", "owner")


def lean(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` without its null and empty values (False and 0 stay: they say something)."""
    return {k: v for k, v in obj.items() if v is not None and v != "" and v != [] and v != {}}


def cut(text: str, limit: int, rest: str) -> str:
    """``text``, or its first ``limit`` characters and a marker saying how to get the rest."""
    return _marked(text, _head(text, limit), rest)


def first_line(text: str, limit: int, rest: str) -> str:
    """The first non-empty line of ``text`` (cut at ``limit``), marked when there is more."""
    stripped = text.strip()
    if not stripped:
        return ""
    return _marked(stripped, _head(stripped.splitlines()[0].strip(), limit), rest)


def _head(text: str, limit: int) -> str:
    """At most ``limit`` characters of ``text``, ending at a word when one ends near there."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = head.rfind(" ", limit * 3 // 4)
    return (head[:space] if space > 0 else head).rstrip()


def _marked(whole: str, head: str, rest: str) -> str:
    if head == whole:
        return whole
    return f"{head} … (+{len(whole) - len(head)} chars: {rest})"


# ---------------------------------------------------------------------------- task lines


def line(
    task: Task,
    *,
    worker: bool = False,
    title: bool = False,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A task in a few dozen characters: id, state, why (when the state does not say), next.

    ``worker`` adds the worker (and model) it runs on, ``title`` its title's first line,
    ``extra`` more fields (before ``next``, which comes last).
    """
    d: dict[str, Any] = {"id": task.id, "state": str(task.state)}
    if worker:
        d["worker"] = task.worker
        d["model"] = task.model
    if title:
        d["title"] = first_line(task.title, TITLE_LINE, "inspect detail=task")
    if task.completion is not None and task.completion != Completion.COMPLETED:
        d["completion"] = str(task.completion)
    if task.message and _IMPLIED.get(task.state) != task.message:
        d["message"] = cut(task.message, MESSAGE_LINE, "inspect detail=task")
    if task.archived_at is not None:
        d["archived"] = True
    d.update(extra or {})
    d["next"] = next_moves(task)
    return lean(d)


def spent(task: Task) -> dict[str, Any]:
    """``tokens`` (all of them) and ``cost`` with its ``costSource``, when the task used any:
    the few fields a task's line adds for it."""
    used = usage.of_task(task.options)
    if used.empty:
        return {}
    return {"tokens": used.tokens, "cost": used.cost, "costSource": used.cost_source}


def woke(task: Task, event: Event | None = None, now: float | None = None) -> dict[str, Any]:
    """What a watch answers with: the task's line, its summary's first line, and for a rate
    limit (``event`` a state event to ``rate_limited``) how many seconds until it retries."""
    if event is not None and event.data.get("to") == str(S.RATE_LIMITED):
        resets = event.data.get("resets_at")
        task = dataclasses.replace(
            task,
            state=S.RATE_LIMITED,
            completion=Completion.RATE_LIMIT,
            message=str(event.data.get("reason") or task.message),
            resets_at=float(resets) if isinstance(resets, int | float) else task.resets_at,
        )
    extra: dict[str, Any] = {
        "summary": first_line(task.summary, SUMMARY_LINE, "inspect detail=summary")
    }
    extra.update(spent(task))
    if task.state == S.RATE_LIMITED and task.resets_at is not None:
        extra["retryIn"] = max(0, round(task.resets_at - (time.time() if now is None else now)))
    return line(task, extra=extra)


def woke_by(event: Event) -> bool:
    """A state event that wakes a watch while it waits."""
    return event.type == EventType.STATE and str(event.data.get("to")) in WAKES


# ---------------------------------------------------------------------------- inspect


def diff_counts(files: Sequence[FileDiff], final: bool) -> str:
    """``"app.py +1 -1, 1 hunk pending"`` (``"3 files …"`` for several; ``"draft: …"`` while
    the agent works); "" for no change."""
    hunks = [h for f in files for h in f.hunks]
    if not hunks and not files:
        return ""
    added, removed = count_lines(hunks)
    pending = sum(1 for h in hunks if h.state == HunkState.PENDING)
    what = cut(files[0].path, 60, "diff") if len(files) == 1 else f"{len(files)} files"
    text = f"{what} +{added} -{removed}, "
    if pending == len(hunks):
        text += f"{pending} hunk{'s' if pending != 1 else ''} pending"
    else:
        text += f"{pending} of {len(hunks)} hunks pending"
    return text if final else "draft: " + text


def short(
    task: Task,
    attempts: Sequence[Attempt],
    files: Sequence[FileDiff],
    final: bool,
    permissions: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """``inspect``'s default answer: state, completion, summary line, counts, next moves, and
    the permission requests waiting for an answer (what the caller must act on), if any. No
    id: the caller named the task (``detail`` ``task`` has its whole id)."""
    d: dict[str, Any] = {
        "state": str(task.state),
        "completion": str(task.completion) if task.completion else None,
        "message": (
            None
            if _IMPLIED.get(task.state) == task.message
            else cut(task.message, MESSAGE_LINE, "inspect detail=task")
        ),
        "summary": first_line(task.summary, SUMMARY_LINE, "inspect detail=summary"),
        "attempts": len(attempts),
        "usage": task.options.get("usage"),  # baton.core.usage.Usage.to_json(), when known
        "diff": diff_counts(files, final),
        "permissions": [_permission(q) for q in permissions],
        "next": next_moves(task),
    }
    return lean(d)


def details(
    which: Iterable[str], task: Task, attempts: Sequence[Attempt], events: Sequence[Event]
) -> dict[str, Any]:
    """The sections asked for, in :data:`DETAILS` order, each whole (nulls left out)."""
    wanted = set(which)
    sections: dict[str, Any] = {
        "attempts": lambda: [attempt_detail(a) for a in attempts],
        "events": lambda: [e.to_json() for e in events],
        "evidence": lambda: lean(
            {
                "evidence": task.options.get("evidence"),
                "review": task.options.get("review_result"),
                "plan": task.options.get("plan"),
            }
        ),
        "brief": lambda: task.brief,
        "summary": lambda: task.summary,
        "task": lambda: task_record(task),
    }
    return lean({name: sections[name]() for name in DETAILS if name in wanted})


def _permission(request: Mapping[str, Any]) -> dict[str, Any]:
    d = dict(request)
    if isinstance(d.get("preview"), str):
        d["preview"] = cut(d["preview"], MESSAGE_LINE, "inspect detail=events")
    return lean(d)


def task_record(task: Task) -> dict[str, Any]:
    """The task's record without its texts (instruction, brief, summary) or nulls."""
    d = task.to_json()
    for key in _NOT_IN_TASK:
        d.pop(key, None)
    d["targets"] = [lean(t) for t in d.get("targets") or []]
    usage = task.options.get("usage")
    if usage:
        d["usage"] = usage
    d["effort"] = task.options.get("effort")  # the reasoning effort asked for, if any
    return lean(d)


def attempt_detail(attempt: Attempt) -> dict[str, Any]:
    d = attempt.to_json()
    for key in _NOT_IN_ATTEMPT:
        d.pop(key, None)
    return lean(d)


# ---------------------------------------------------------------------------- diff text


def diff_text(
    task: Task, files: Sequence[FileDiff], final: bool, offset: int = 0, limit: int = DIFF_PAGE
) -> str:
    """A task's diff as unified-style text with hunk ids (what an agent reads), from
    ``offset``; cut at ``limit`` characters with a marker giving the offset to go on from."""
    head = f"task {task.id} ({task.state}), {'final' if final else 'draft'} diff"
    lines = [head]
    for f in files:
        lines.append(f"--- {f.old_path or f.path}\n+++ {f.path} ({f.status})")
        for h in f.hunks:
            lines.append(
                f"@@ hunk {h.id} [{h.state}] -{h.old_start},{h.old_count} "
                f"+{h.new_start},{h.new_count} @@"
                + (" (writes a secret value, shown masked)" if h.secret else "")
            )
            if f.binary:
                lines.append("(binary content)")
                continue
            lines += ["-" + x for x in h.old_text.splitlines()]
            lines += ["+" + x for x in h.new_text.splitlines()]
    if not files:
        lines.append("(no changes)")
    lines.append("next: " + ", ".join(next_moves(task)))
    text = "\n".join(lines)
    page = text[offset : offset + limit]
    end = offset + len(page)
    if end < len(text):
        cut_at = page.rfind("\n")
        if cut_at > 0:
            page, end = page[:cut_at], offset + cut_at + 1
        page += f"\n… (cut at {end} of {len(text)} chars: diff id={task.id} offset={end})"
    return page
