"""``fs/read_text_file`` and ``fs/write_text_file``, served inside the task's worktree only.

Most agents write to disk themselves (the worktree is their cwd, which is what isolates them);
Gemini writes only through these requests and OpenCode mirrors its writes through them. A path
outside the worktree — also through a symlink — is refused. A missing file inside reads as
empty text: Gemini's write tool checks existence with a read, and the "not found" error the
Python client would send breaks its write of a new file.
"""

from __future__ import annotations

import os
from pathlib import Path

from baton.acp.policy import inside
from baton.errors import BatonError


class OutsideWorktree(BatonError, PermissionError):
    """A file request for a path outside the task's worktree."""

    def __init__(self, op: str, path: str, root: str) -> None:
        super().__init__(f"{op} refused: {path} is outside the task's worktree {root}")
        self.op, self.path, self.root = op, path, root


def worktree_root(cwd: str) -> str:
    """The checkout holding ``cwd``: the nearest folder with a ``.git`` entry, else ``cwd``."""
    here = Path(cwd).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return str(folder)
    return str(here)


def _checked(op: str, path: str, root: str) -> Path:
    if not os.path.isabs(path) or not inside(path, root):
        raise OutsideWorktree(op, path, root)
    return Path(path)


def read_text(path: str, root: str, line: int | None = None, limit: int | None = None) -> str:
    """The text of ``path`` (from 1-based ``line``, at most ``limit`` lines); "" if missing."""
    file = _checked("fs/read_text_file", path, root)
    try:
        text = file.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    if line is None and limit is None:
        return text
    lines = text.splitlines(keepends=True)
    start = max(0, (line or 1) - 1)
    end = start + limit if limit is not None else len(lines)
    return "".join(lines[start:end])


def write_text(path: str, content: str, root: str) -> None:
    """Write ``content`` to ``path`` inside ``root`` (folders made as needed); never into the
    checkout's ``.git`` (the runner writes outside the agent's sandbox, which keeps it
    read-only: Baton's own git commands obey what is there)."""
    file = _checked("fs/write_text_file", path, root)
    git = os.path.join(os.path.realpath(root), ".git")
    if inside(path, git):
        raise OutsideWorktree("fs/write_text_file", path, git)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(content, encoding="utf-8")
