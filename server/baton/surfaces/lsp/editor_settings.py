"""The editor's settings: what it may choose for the tasks it delegates.

They come from ``initializationOptions`` and ``workspace/didChangeConfiguration``, either
flat or under a ``"baton"`` key::

    {"baton": {"worker": "claude", "model": "sonnet", "isolation": "worktree",
               "briefRules": ["Keep the public API unchanged."], "progressInterval": 0.5}}

A value of the wrong type is ignored (the old value stays) and reported as a warning.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

#: Isolation modes a task may ask for; only git worktrees exist today.
ISOLATION_MODES = ("worktree",)
#: How ACP permission prompts reach the user: a message request, or the client's own UI.
PERMISSION_PROMPTS = ("message", "inline")
#: How an accept's conflicts and refusals reach the user: a message, or the client's own UI
#: (it reads them from the accept's answer).
ACCEPT_REPORTS = ("message", "inline")


@dataclasses.dataclass(frozen=True, slots=True)
class EditorSettings:
    """The editor's choices. ``worker`` None means the broker's default worker."""

    worker: str | None = None
    model: str | None = None
    isolation: str = "worktree"
    brief_rules: tuple[str, ...] = ()
    progress_interval: float = 0.5  # seconds between two progress reports of one task
    permission_prompts: str = "message"  # "inline": the client shows baton/permission itself
    accept_reports: str = "message"  # "inline": the client reports an accept's conflicts
    #: Be the IDE of Claude Code sessions in a terminal: their edits arrive as Baton diffs.
    claude_ide: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "worker": self.worker,
            "model": self.model,
            "isolation": self.isolation,
            "briefRules": list(self.brief_rules),
            "progressInterval": self.progress_interval,
            "permissionPrompts": self.permission_prompts,
            "acceptReports": self.accept_reports,
            "claudeIde": self.claude_ide,
        }


def _section(raw: object) -> Mapping[str, Any] | None:
    if not isinstance(raw, Mapping):
        return None
    inner = raw.get("baton")
    if isinstance(inner, Mapping):
        return inner
    return raw


def merge(current: EditorSettings, raw: object) -> tuple[EditorSettings, list[str]]:
    """``current`` updated with the known keys of ``raw``; plus warnings for bad values."""
    section = _section(raw)
    if section is None:
        return current, ([] if raw is None else [f"settings must be an object, got {raw!r}"])
    changes: dict[str, Any] = {}
    warnings: list[str] = []

    def optional_text(key: str, field: str) -> None:
        if key not in section:
            return
        value = section[key]
        if value is None or (isinstance(value, str) and value.strip()):
            changes[field] = value.strip() if isinstance(value, str) else None
        else:
            warnings.append(f"setting {key} must be a non-empty string or null")

    optional_text("worker", "worker")
    optional_text("model", "model")
    if "isolation" in section:
        value = section["isolation"]
        if value in ISOLATION_MODES:
            changes["isolation"] = value
        else:
            warnings.append(f"setting isolation must be one of {', '.join(ISOLATION_MODES)}")
    if "briefRules" in section:
        value = section["briefRules"]
        if isinstance(value, list) and all(isinstance(r, str) for r in value):
            changes["brief_rules"] = tuple(r.strip() for r in value if r.strip())
        else:
            warnings.append("setting briefRules must be a list of strings")
    if "progressInterval" in section:
        value = section["progressInterval"]
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 60:
            changes["progress_interval"] = float(value)
        else:
            warnings.append("setting progressInterval must be a number of seconds (0-60)")
    if "permissionPrompts" in section:
        value = section["permissionPrompts"]
        if value in PERMISSION_PROMPTS:
            changes["permission_prompts"] = value
        else:
            warnings.append("setting permissionPrompts must be one of message, inline")
    if "acceptReports" in section:
        value = section["acceptReports"]
        if value in ACCEPT_REPORTS:
            changes["accept_reports"] = value
        else:
            warnings.append("setting acceptReports must be one of message, inline")
    if "claudeIde" in section:
        value = section["claudeIde"]
        if isinstance(value, bool):
            changes["claude_ide"] = value
        else:
            warnings.append("setting claudeIde must be true or false")
    return dataclasses.replace(current, **changes), warnings
