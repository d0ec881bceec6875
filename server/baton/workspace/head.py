"""Where a repository's top is tracked and what its HEAD is, read from its files.

Every snapshot starts by asking ``git rev-parse`` where the folder is tracked (its top, git
dir, common dir) and HEAD's commit: a git process on every task's way to its agent. For the
common case, a folder that is the top of a repository whose ``.git`` is a directory, the
answer is in a few files: ``.git/HEAD`` names the branch (or holds the commit when
detached), the branch is a loose ref file or a line of ``packed-refs``. :func:`read_top`
reads them, and says None wherever git could answer otherwise, so git is asked as before:

- ``.git`` is a file (a linked worktree, a submodule), or the folder is inside a repository;
- the repository or its folder belongs to another user (git's ``safe.directory`` check);
- its settings move the work tree or make it bare (``core.worktree``, ``core.bare``,
  per-worktree settings), keep refs in another format (``extensions.refStorage``) or hash
  with another function than SHA-1;
- HEAD or the branch is anything but a plain sha or a ``refs/heads/`` name.

A branch whose ref names a non-commit object (git's porcelain refuses to make one) is taken
as named; ``rev-parse HEAD^{commit}`` would have peeled or refused it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from baton.errors import BatonError
from baton.workspace.gitconfig import repo_config

_SHA1 = re.compile(r"[0-9a-f]{40}")
_BRANCH = re.compile(r"refs/heads/[^\s\\:?*\[~^]+")


@dataclass(frozen=True)
class Top:
    """A repository's top as its files say: its git dir, HEAD's commit (None: unborn) and
    whether HEAD is detached."""

    git_dir: Path
    base: str | None
    detached: bool


def _owned(path: Path) -> bool:
    try:
        return os.lstat(path).st_uid == os.geteuid()
    except OSError:
        return False


def _plain(settings: dict[str, str]) -> bool:
    """Whether git would take the repository with these settings as its folder's own, with
    loose and packed ref files and SHA-1 names."""
    if "core.worktree" in settings or settings.get("core.bare", "false").lower() == "true":
        return False
    if settings.get("extensions.worktreeconfig", "false").lower() == "true":
        return False
    return (
        settings.get("extensions.refstorage", "files").lower() == "files"
        and settings.get("extensions.objectformat", "sha1").lower() == "sha1"
    )


def _packed(common: Path, ref: str) -> str | None:
    """The sha of ``ref`` in ``packed-refs``; None when it has none."""
    try:
        text = (common / "packed-refs").read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return None
    for line in text.splitlines():
        sha, _, name = line.partition(" ")
        if name == ref and _SHA1.fullmatch(sha):
            return sha
    return None


class _AskGit(BatonError):
    """The files say something this module does not read: git is asked."""


def _branch(common: Path, ref: str) -> str | None:
    """The sha of the branch ``ref``; None when it does not exist (HEAD is unborn)."""
    if ".." in ref or ref.endswith((".lock", "/", ".")) or "//" in ref:
        raise _AskGit(ref)
    path = common / ref
    try:
        if path.is_symlink():
            raise _AskGit(ref)
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        text = ""
    except (OSError, ValueError) as exc:  # a folder of that name, an unreadable or odd file
        raise _AskGit(ref) from exc
    if text:
        if not _SHA1.fullmatch(text):
            raise _AskGit(ref)  # a symbolic ref: git follows it
        return text
    try:
        return _packed(common, ref)
    except (OSError, ValueError) as exc:
        raise _AskGit(ref) from exc


def read_top(root: Path) -> Top | None:
    """The repository whose top is ``root``, read from its files (see the module's
    docstring); None where git must be asked."""
    git_dir = root / ".git"
    if not git_dir.is_dir() or git_dir.is_symlink() or (git_dir / "commondir").exists():
        return None
    if not (_owned(root) and _owned(git_dir)) or not (git_dir / "objects").is_dir():
        return None
    try:
        if (git_dir / "HEAD").is_symlink():
            return None
        head = (git_dir / "HEAD").read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        return None
    if not _plain(repo_config(git_dir)):
        return None
    if _SHA1.fullmatch(head):
        return Top(git_dir, head, True)
    ref = head.removeprefix("ref:").strip()
    if not head.startswith("ref:") or not _BRANCH.fullmatch(ref):
        return None
    try:
        return Top(git_dir, _branch(git_dir, ref), False)
    except _AskGit:
        return None
