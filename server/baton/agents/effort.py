"""Reasoning effort: how hard the agent's model thinks, where its CLI lets Baton say so.

Baton's levels are the union of what the CLIs take: ``low``, ``medium``, ``high``,
``xhigh``, ``max``. Claude Code takes them all as ``--effort LEVEL``; Codex takes
``-c model_reasoning_effort="LEVEL"`` up to ``xhigh`` (``max`` becomes ``xhigh``). The
other CLIs have no such option: a task's effort is ignored there, and the task's log says
so (:func:`ignored`).
"""

from __future__ import annotations

from baton.core.effort import LEVELS

#: The providers whose CLI takes an effort, and how each level is spelled to it.
_SPELLED: dict[str, dict[str, str]] = {
    "claude": {level: level for level in LEVELS},
    "codex": {**{level: level for level in LEVELS[:4]}, "max": "xhigh"},
}


def claude_args(effort: str | None) -> list[str]:
    """Claude Code's argv for ``effort`` (none for no effort)."""
    return ["--effort", _SPELLED["claude"][effort]] if effort in _SPELLED["claude"] else []


def codex_args(effort: str | None) -> list[str]:
    """Codex's ``-c`` override for ``effort`` (none for no effort)."""
    spelled = _SPELLED["codex"].get(effort or "")
    return ["-c", f'model_reasoning_effort="{spelled}"'] if spelled else []


def ignored(provider: str, effort: str | None) -> str | None:
    """What to tell the user when ``provider``'s CLI cannot take ``effort`` (None: it can,
    or no effort was asked)."""
    if not effort or provider in _SPELLED:
        return None
    return f"effort {effort} ignored: the {provider} CLI has no reasoning-effort option"
