"""Files through which local clients find a server and its secret token: the broker's
discovery files and the Claude Code IDE lock files.

The folder is 0700 (re-chmodded when it already exists), the file 0600, written to a private
temporary file (``.tmp-*.part``, which no reader's pattern matches) and renamed into place,
so that a reader never sees half a file and nobody else can read the token.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def private_folder(path: Path) -> Path:
    """``path``, created if needed, readable by the user only."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)
    return path


def write_json(target: Path, obj: Any) -> Path:
    """Write (or replace) ``target`` with ``obj`` as JSON, atomically and 0600."""
    where = private_folder(target.parent)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=where)  # O_EXCL, 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


def remove(path: Path) -> None:
    """Remove ``path`` if it is still there."""
    with contextlib.suppress(OSError):
        path.unlink()
