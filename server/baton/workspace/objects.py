"""Baton's own commits (snapshot, result) written as loose objects in-process.

A commit object is a few lines of text (``tree``, ``parent``, ``author``, ``committer``, the
message) stored zlib-compressed under ``objects/<2 hex>/<38 hex>`` of the repository's
common git dir; writing one costs less than a ``git commit-tree`` process. The file is
written beside its place and renamed into it, so it is whole or absent, as git does. Where
git would write something else — a repository that is not SHA-1, that is shared with a
group, or whose commits carry another encoding — :func:`commit_tree` runs git as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

from baton.workspace.git import IDENTITY, common_dir_of, run_git
from baton.workspace.gitconfig import repo_config


def _in_process(common: Path) -> bool:
    """Whether a loose object written here is what git itself would write."""
    settings = repo_config(common)
    return (
        settings.get("extensions.objectformat", "sha1").lower() == "sha1"
        and settings.get("core.sharedrepository", "false").lower() in ("false", "umask", "0")
        and settings.get("i18n.commitencoding", "utf-8").lower() in ("utf-8", "utf8")
        and (common / "objects").is_dir()
    )


def commit_body(tree: str, parents: Sequence[str], message: str, when: float) -> bytes:
    """The text of a commit by Baton at ``when`` (local time zone), as ``commit-tree`` makes."""
    local = time.localtime(when)
    offset = local.tm_gmtoff or 0
    sign = "-" if offset < 0 else "+"
    zone = f"{sign}{abs(offset) // 3600:02d}{abs(offset) % 3600 // 60:02d}"
    person = f"{IDENTITY[0]} <{IDENTITY[1]}> {int(when)} {zone}"
    lines = [f"tree {tree}", *(f"parent {p}" for p in parents)]
    lines += [f"author {person}", f"committer {person}", "", message.rstrip("\n"), ""]
    return "\n".join(lines).encode("utf-8")


def write_loose(common: Path, kind: str, body: bytes) -> str:
    """Store ``body`` as a loose object of ``kind`` in ``common``'s object store; its sha."""
    data = f"{kind} {len(body)}\0".encode() + body
    sha = hashlib.sha1(data, usedforsecurity=False).hexdigest()
    folder = common / "objects" / sha[:2]
    target = folder / sha[2:]
    if target.exists():
        return sha
    folder.mkdir(exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="tmp_obj_", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(zlib.compress(data))
        os.chmod(tmp, 0o444)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return sha


def commit_tree(cwd: Path, git_dir: Path, tree: str, parents: Sequence[str], message: str) -> str:
    """A commit of ``tree`` on ``parents`` by Baton in the repository at ``git_dir``; its sha."""
    common = common_dir_of(git_dir)
    if _in_process(common):
        return write_loose(common, "commit", commit_body(tree, parents, message, time.time()))
    args = ["commit-tree", tree, *(a for p in parents for a in ("-p", p)), "-m", message]
    return run_git(args, cwd, git_dir=git_dir).strip()
