"""Small helpers every stream parser needs: reading loose JSON, clipping, relative paths, and
the one marker of a resumed session the CLI no longer has (:func:`session_lost`)."""

from __future__ import annotations

import json
import os
import re
from typing import Any

from baton.core.events import Event, EventType


def json_object(line: str) -> dict[str, Any] | None:
    """The JSON object on one line of a CLI's stream; None for a blank or any other line."""
    if not line.strip():
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def unparsed(line: str, prefix: str, level: str = "warning") -> list[Event]:
    """What a line that is not a JSON object becomes: nothing if blank, else a log event."""
    if not line.strip():
        return []
    return [Event(EventType.LOG, {"level": level, "message": f"{prefix}: {line}"})]


def as_dict(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (streams are not to be trusted)."""
    return value if isinstance(value, dict) else {}


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def git_root(path: str) -> str | None:
    """The nearest folder above ``path`` holding ``.git`` (a folder, or a worktree's file)."""
    folder = os.path.dirname(path)
    while not os.path.exists(os.path.join(folder, ".git")):
        if os.path.dirname(folder) == folder:
            return None
        folder = os.path.dirname(folder)
    return folder


def relative(path: str, root: str | None, *, find_root: bool = False) -> str:
    """``path`` relative to ``root`` when it lies inside it; otherwise unchanged.

    With ``find_root`` and no ``root``, the path's git root stands in (for CLIs whose stream
    does not say their working folder).
    """
    if not os.path.isabs(path):
        return path
    if not root and find_root:
        root = git_root(path)
    if not root:
        return path
    try:
        rel = os.path.relpath(path, root)
    except ValueError:
        return path
    return path if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


#: What a CLI says when ``--resume``/``--session`` names a session it no longer has.
SESSION_GONE = re.compile(
    r"no previous sessions? found|no conversation found with session|"
    r"session (?:\S+ )?(?:not found|does not exist)|invalid session identifier|"
    r"no rollout found|no session found",
    re.I,
)


def session_lost(text: str, message: str, **extra: Any) -> Event | None:
    """The error event for a resumed session the CLI no longer has, when ``text`` says so.

    Its data is ``{"kind": "worker_error", "session_lost": true, …}``: the runtime's cue to
    start a fresh session with the brief and the conversation so far instead of failing.
    """
    if not SESSION_GONE.search(text):
        return None
    return Event(
        EventType.ERROR,
        {"kind": "worker_error", "message": message, "session_lost": True, **extra},
    )
