"""The default worker (and model) for work that names none, as ``baton love`` and the
websocket's ``love`` set it: which file holds it for a project or the user, the check of
the worker named, the edit (:mod:`baton.config.writing`) and the default in effect after.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from baton.config.layers import PYPROJECT, ConfigError, project_config_path, user_config_path
from baton.config.settings import load_settings
from baton.config.writing import set_keys

KEYS = ("default_worker", "default_model")


class UnknownWorker(ConfigError):
    """The worker named is not a configured (enabled) profile."""


def target(root: Path, user: bool) -> tuple[Path, str | None]:
    """The file to write, and its table (``tool.baton`` in a pyproject.toml): the user's
    config, else the project's file for ``root`` (a new ``.baton.toml`` there without one)."""
    if user:
        return user_config_path(), None
    found, _ = project_config_path(root)
    if found is None:
        return root / ".baton.toml", None
    return found, "tool.baton" if found.name == PYPROJECT else None


def in_effect(root: Path) -> dict[str, Any]:
    """The default in effect for ``root`` now, and why: ``{default, model, reason}``."""
    settings = load_settings(root)
    return {
        "default": settings.default_worker or None,
        "model": settings.default_model,
        "reason": settings.default_reason,
    }


def choose(
    root: Path, worker: str | None, model: str | None = None, *, user: bool = False
) -> dict[str, Any]:
    """Set ``worker`` (and ``model``; none clears a model set before) as the default in the
    project's file or, ``user``, the user's; ``worker`` None clears both keys there.
    ``{file, changed, set, default, model, reason}``; :class:`UnknownWorker` for a worker
    that is not configured or is disabled."""
    values: dict[str, str | None] = dict.fromkeys(KEYS)
    if worker is not None:
        profile = load_settings(root).profiles.get(worker)
        if profile is None:
            known = ", ".join(sorted(load_settings(root).profiles)) or "none"
            raise UnknownWorker(f"unknown worker {worker!r}; configured workers: {known}")
        if not profile.enabled:
            raise UnknownWorker(f"worker {worker!r} is disabled")
        values = {"default_worker": worker, "default_model": model or None}
    path, table = target(root, user)
    changed = set_keys(path, values, table=table)
    return {"file": str(path), "changed": changed, "set": values, **in_effect(root)}
