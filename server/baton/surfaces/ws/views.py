"""The JSON shapes the websocket (and the CLI's --json, and the MCP tools) show tasks in.

Every task shape carries ``next``: the moves that make sense in the task's current state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from baton.core.diff import FileDiff, HunkState, count_lines
from baton.core.events import Event
from baton.core.task import Attempt, Task, next_moves


def task_json(task: Task) -> dict[str, Any]:
    """The whole task (minus internal options), with ``next`` and ``usage`` when known."""
    d = task.to_json()
    options = d.pop("options", None) or {}
    if "usage" in options:
        d["usage"] = options["usage"]
    d["next"] = next_moves(task)
    return d


def task_brief(task: Task) -> dict[str, Any]:
    """A few hundred characters: what an agent needs to decide its next move."""
    d: dict[str, Any] = {
        "id": task.id,
        "state": str(task.state),
        "title": task.title,
        "worker": task.worker,
        "next": next_moves(task),
    }
    if task.completion is not None:
        d["completion"] = str(task.completion)
    if task.message:
        d["message"] = task.message
    return d


def attempt_json(attempt: Attempt) -> dict[str, Any]:
    return attempt.to_json()


def event_json(event: Event) -> dict[str, Any]:
    return event.to_json()


def diff_stats(files: Sequence[FileDiff], final: bool) -> dict[str, Any]:
    """Files and hunk counts of a diff, without the text."""
    hunks = [h for f in files for h in f.hunks]
    added, removed = count_lines(hunks)
    return {
        "final": final,
        "files": [
            {
                "path": f.path,
                "status": str(f.status),
                "hunks": [h.id for h in f.hunks],
            }
            for f in files
        ],
        "hunks": len(hunks),
        "pending": sum(1 for h in hunks if h.state == HunkState.PENDING),
        "added": added,
        "removed": removed,
    }


def diff_json(files: Sequence[FileDiff], final: bool) -> dict[str, Any]:
    return {"final": final, "files": [f.to_json() for f in files]}
