"""Where Baton keeps its state on disk: the state home, the database, task folders, sockets.

``state_home()`` is ``$BATON_HOME`` if set, else ``$XDG_STATE_HOME/baton``, else
``~/.local/state/baton``. ``runtime_dir()`` is ``$XDG_RUNTIME_DIR/baton``, else ``<home>/run``.
Both are created readable by the user only (0700). The other functions only build paths.
"""

from __future__ import annotations

import os
from pathlib import Path

DB_NAME = "baton.db"


def _env_dir(name: str) -> Path | None:
    """An absolute directory from the environment; empty or relative values count as unset."""
    value = os.environ.get(name, "")
    if not value:
        return None
    path = Path(value).expanduser()
    return path if path.is_absolute() else None


def _private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) if missing; a folder Baton creates is made 0700."""
    if not path.is_dir():
        path.mkdir(parents=True, mode=0o700, exist_ok=True)
        path.chmod(0o700)
    return path


def state_home() -> Path:
    """The folder that holds the database, task folders and worktrees (created, 0700)."""
    explicit = _env_dir("BATON_HOME")
    if explicit is not None:
        return _private_dir(explicit)
    xdg = _env_dir("XDG_STATE_HOME")
    base = xdg if xdg is not None else Path.home() / ".local" / "state"
    return _private_dir(base / "baton")


def db_path(home: Path) -> Path:
    """The SQLite database inside ``home``."""
    return home / DB_NAME


def tasks_dir(home: Path) -> Path:
    """The folder holding one folder per task (agent output, exit records)."""
    return home / "tasks"


def task_dir(home: Path, task_id: str) -> Path:
    """The folder of one task: its agent's stdout/stderr files and exit records."""
    return tasks_dir(home) / task_id


def worktrees_dir(home: Path) -> Path:
    """The folder holding the isolated git worktrees tasks run in."""
    return home / "worktrees"


def runtime_dir(home: Path | None = None) -> Path:
    """Where discovery files and sockets go (created, 0700).

    ``$XDG_RUNTIME_DIR/baton`` if that variable is set, else ``<home>/run`` with ``home``
    defaulting to :func:`state_home`.
    """
    xdg = _env_dir("XDG_RUNTIME_DIR")
    if xdg is not None:
        return _private_dir(xdg / "baton")
    return _private_dir((home if home is not None else state_home()) / "run")
