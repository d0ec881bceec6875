"""The lock file through which Claude Code finds "the IDE": ``<claude config>/ide/<port>.lock``.

The Claude config folder is ``$CLAUDE_CONFIG_DIR`` when set, else ``~/.claude``. The lock holds
``{"pid", "workspaceFolders", "ideName", "transport": "ws", "authToken"}``; the token is the
secret the CLI presents on the websocket upgrade, so the folder is 0700 (re-chmodded when it
already exists) and the file 0600, written to a private temporary file and renamed into place
(a reader never sees half a file). The server removes its lock when it closes and at exit; locks
left by a dead process of the same ``ideName`` are stale and may be removed
(:func:`remove_stale`); other IDEs' locks are never touched.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from baton.surfaces import private_files

SUFFIX = ".lock"


def new_token() -> str:
    """A fresh auth token: 16 bytes from the OS CSPRNG, as 32 hex characters."""
    return secrets.token_hex(16)


def claude_config_dir(env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's config folder: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    environ = os.environ if env is None else env
    configured = environ.get("CLAUDE_CONFIG_DIR")
    if configured:
        return Path(configured).expanduser()
    home = environ.get("HOME")
    return (Path(home) if home else Path.home()) / ".claude"


def lock_dir(config_dir: Path | None = None) -> Path:
    """``<config>/ide``, the folder of the lock files."""
    return (config_dir if config_dir is not None else claude_config_dir()) / "ide"


@dataclass(frozen=True, slots=True)
class LockFile:
    """The contents of one lock file."""

    pid: int
    auth_token: str
    workspace_folders: list[str] = field(default_factory=list)
    ide_name: str = "Baton"
    transport: str = "ws"

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "workspaceFolders": list(self.workspace_folders),
            "ideName": self.ide_name,
            "transport": self.transport,
            "authToken": self.auth_token,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> LockFile:
        folders = obj.get("workspaceFolders") or []
        return cls(
            pid=int(obj["pid"]),
            auth_token=str(obj.get("authToken", "")),
            workspace_folders=[str(f) for f in folders],
            ide_name=str(obj.get("ideName", "")),
            transport=str(obj.get("transport", "")),
        )


def write(port: int, lock: LockFile, config_dir: Path | None = None) -> Path:
    """Write (or replace) ``<config>/ide/<port>.lock`` atomically; returns its path."""
    return private_files.write_json(lock_dir(config_dir) / f"{port}{SUFFIX}", lock.to_json())


def read(path: Path) -> LockFile | None:
    """One lock file, or None when it is unreadable or malformed."""
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
        return LockFile.from_json(obj) if isinstance(obj, dict) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


remove = private_files.remove


def alive(pid: int) -> bool:
    """Whether the lock's process runs (a zombie does not)."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def remove_stale(ide_name: str, config_dir: Path | None = None) -> list[Path]:
    """Remove the lock files named ``ide_name`` whose process is gone; returns them."""
    removed: list[Path] = []
    try:
        paths = sorted(lock_dir(config_dir).glob(f"*{SUFFIX}"))
    except OSError:
        return removed
    for path in paths:
        lock = read(path)
        if lock is None or lock.ide_name != ide_name or lock.pid == os.getpid():
            continue
        if not alive(lock.pid):
            remove(path)
            removed.append(path)
    return removed
