"""The whole-record JSON shapes: a task, an attempt, an event, a diff.

What ``get``, ``events`` and ``diff`` answer with, and what the CLI rebuilds its objects from;
nulls and empty values are left out (the objects' ``from_json`` fill in their defaults). The
short answers most methods give are in :mod:`baton.surfaces.ws.answers`.
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
    return {k: v for k, v in d.items() if v is not None and v != "" and v != [] and v != {}}


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
