"""The workers a task in a folder may use: one answer for every surface that lists them.

The websocket's ``workers`` method (so ``baton workers`` and the MCP tool) and the language
server's ``baton.workers`` command answer with :func:`workers_answer`, from the same
resolved settings routing reads (defaults, user and project config): the default worker and
why, and every profile with its provider, model, where it was configured and whether it can
run now (:func:`baton.config.logins.why_unusable`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from baton.config.logins import why_unusable
from baton.config.settings import Settings, load_settings
from baton.runtime import Supervisor
from baton.surfaces.ws.answers import lean


async def workers_answer(sup: Supervisor, root: Path | None) -> dict[str, Any]:
    """``{root, default, default_reason, workers: [...]}`` for a task delegated in ``root``
    (None: the broker's own settings, no project). Raises ``ConfigError`` for a bad config."""
    if root is not None:
        settings = await asyncio.to_thread(sup.settings.get, root)
    else:
        settings = await asyncio.to_thread(load_settings, None, profiles=sup.profiles)
    return await asyncio.to_thread(_answer, sup, settings, root)


def _answer(sup: Supervisor, settings: Settings, root: Path | None) -> dict[str, Any]:
    profiles = {**sup.profiles, **settings.profiles}
    allowed = settings.allowed_profiles()
    workers = []
    for prof in profiles.values():
        problem = why_unusable(prof)
        workers.append(
            lean(
                {
                    "name": prof.name,
                    "provider": prof.provider,
                    "model": prof.model,
                    "models": list(prof.models),
                    "label": prof.label,
                    "enabled": prof.enabled,
                    "allowed": prof.name in allowed,
                    "can_run": problem is None,
                    "problem": problem,
                    "concurrency": prof.concurrency,
                    "source": _source(settings, prof.name),
                }
            )
        )
    return {
        "root": str(root) if root is not None else None,
        "default": settings.default_worker or None,
        "default_reason": settings.default_reason,
        "workers": workers,
    }


def _source(settings: Settings, name: str) -> str | None:
    """Where a profile was configured: ``user``, ``project`` or ``default`` (found on PATH)."""
    src = settings.provenance.get(f"profiles.{name}.provider")
    return src.layer if src is not None else None
