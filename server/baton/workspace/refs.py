"""Baton's own refs (``refs/baton/*``) written in-process, as ``git update-ref`` writes them.

A loose ref is one line, the commit's sha, in a file under the repository's common git dir.
Git writes it by creating ``<ref>.lock`` exclusively (a second writer fails instead of
racing), writing the line and renaming the lock over the ref; doing the same here costs a
few system calls instead of a git process on every task's way to its agent and back.
Where git would do more or something else — a ref storage other than files, reflogs for
every ref (``core.logAllRefUpdates=always``), a repository shared with a group, a hash other
than SHA-1, a ref outside ``refs/baton/`` — or anything is in the way, git is run as before.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from baton.workspace.git import common_dir_of, run_git
from baton.workspace.gitconfig import repo_config

_SHA1 = re.compile(r"^[0-9a-f]{40}$")
_OWN = "refs/baton/"


def _in_process(common: Path, ref: str, sha: str) -> bool:
    """Whether writing the loose ref here is what ``git update-ref`` would do."""
    if not ref.startswith(_OWN) or ".." in ref or ref.endswith((".lock", "/")):
        return False
    if not _SHA1.match(sha):
        return False
    settings = repo_config(common)
    return (
        settings.get("extensions.refstorage", "files").lower() == "files"
        and settings.get("extensions.objectformat", "sha1").lower() == "sha1"
        and settings.get("core.logallrefupdates", "").lower() != "always"
        and settings.get("core.sharedrepository", "false").lower() in ("false", "umask", "0")
    )


def _write_loose(common: Path, ref: str, sha: str) -> bool:
    """Write the loose ref; False (nothing changed) when something is in the way."""
    path = common / ref
    lock = path.with_name(path.name + ".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    except OSError:  # a file where a folder must be, or another writer's lock
        return False
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(sha + "\n")
        os.rename(lock, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        return False
    return True


def update_ref(git_dir: Path, ref: str, sha: str) -> None:
    """Point ``ref`` of the repository at ``git_dir`` at ``sha`` (``git update-ref``)."""
    common = common_dir_of(git_dir)
    if _in_process(common, ref, sha) and _write_loose(common, ref, sha):
        return
    run_git(["update-ref", ref, sha], git_dir, git_dir=git_dir)
