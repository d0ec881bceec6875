"""A warm seed: Baton's refreshed copy of a repository's index, which its snapshots start from.

A snapshot stages the whole work tree (``git add -A``) in a copy of the user's index, whose
stat data tells git which files it need not read again. Git trusts an entry's stat data only
when the file is older than the index ("racy git"): after a clone, a checkout or a pull, the
files written in the index's last second are read and hashed again by every snapshot, and
the tree cache of their folders is dropped (``write-tree`` hashes them again too); on 5,000
files, most of a snapshot's time.

So, once a snapshot found none, Baton makes a copy of the user's index whose stat data is
fresh (``git update-index -q --refresh`` on the copy, in the background at the lowest
priority; the user's index is only read) and keeps it under the name of the index version it
was made from: the index's own checksum, its last 20 bytes, which change with every byte of
it. A snapshot starts from that copy only while the user's index still ends with that
checksum, so the copy holds the same entries (paths, modes, blobs, flags) as the user's
index, and ``add -A`` stages the same tree from it; only stat data differs, which decides
what git reads again, never what it stages.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import time
from pathlib import Path

from baton.workspace.git import git_process, idle

#: Inside the state home: the warm seeds of every repository.
SEEDS = "seeds"
_CHECKSUM = 20
_NO_CHECKSUM = b"\0" * _CHECKSUM  # index.skipHash: git wrote none
_TMP = ".tmp-"
#: Seconds after which a copy being made is taken for one a dead broker left.
_STALE = 3600.0


def _checksum(index: Path) -> str | None:
    """The checksum an index file ends with; None without a usable one."""
    try:
        with open(index, "rb") as fh:
            fh.seek(-_CHECKSUM, os.SEEK_END)
            tail = fh.read(_CHECKSUM)
    except OSError:
        return None
    return tail.hex() if len(tail) == _CHECKSUM and tail != _NO_CHECKSUM else None


def _prefix(git_dir: Path) -> str:
    """The start of the names of the repository's warm copies (its git dir's hash)."""
    raw = str(git_dir.resolve()).encode("utf-8", "surrogateescape")
    return hashlib.sha256(raw).hexdigest()[:16] + "-"


def seed_of(git_dir: Path, seeds: Path) -> Path:
    """The index a snapshot of the repository at ``git_dir`` starts from: Baton's warm copy
    of its index while the index is the version it was made from, else the index itself."""
    own = git_dir / "index"
    checksum = _checksum(own)
    if checksum is not None:
        warm = seeds / (_prefix(git_dir) + checksum)
        if warm.is_file():
            return warm
    return own


def needs_warming(git_dir: Path, seeds: Path) -> bool:
    """Whether the repository's index has a usable checksum and no warm copy of it yet."""
    return seed_of(git_dir, seeds) == git_dir / "index" and _checksum(git_dir / "index") is not None


def warm(git_dir: Path, top: Path, seeds: Path) -> bool:
    """Make the warm copy of the index of the repository at ``git_dir`` (work tree ``top``)
    as it is now, at the lowest priority; older copies of the repository's go. Whether one
    was made."""
    own = git_dir / "index"
    try:
        data = own.read_bytes()  # one whole version: git replaces the index by a rename
    except OSError:
        return False
    checksum = data[-_CHECKSUM:]
    body = data[:-_CHECKSUM]
    if data[:4] != b"DIRC" or checksum == _NO_CHECKSUM:
        return False
    if hashlib.sha1(body, usedforsecurity=False).digest() != checksum:
        return False  # not a SHA-1 index read whole
    prefix = _prefix(git_dir)
    target = seeds / (prefix + checksum.hex())
    if target.exists():
        return False
    seeds.mkdir(parents=True, exist_ok=True)
    tmp = seeds / f"{_TMP}{os.getpid()}-{secrets.token_hex(4)}"
    try:
        tmp.write_bytes(data)
        with idle():
            git_process(
                ["update-index", "-q", "--refresh"],
                top,
                git_dir=git_dir,
                env={"GIT_INDEX_FILE": str(tmp)},
                ok_codes=(0, 1),
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    now = time.time()
    for old in seeds.iterdir():
        with contextlib.suppress(OSError):
            older = old.name.startswith(prefix) and old != target
            if older or (old.name.startswith(_TMP) and now - old.stat().st_mtime > _STALE):
                old.unlink()
    return True


def clear(seeds: Path) -> tuple[int, int]:
    """Remove every warm copy (``baton clean``): how many, and their bytes. A copy being
    made is left to its maker; snapshots start from the index itself until the next copy.
    A snapshot that was about to read one that goes starts from its tree instead."""
    removed = size = 0
    if not seeds.is_dir():
        return 0, 0
    for old in seeds.iterdir():
        if old.name.startswith(_TMP):
            continue
        with contextlib.suppress(OSError):
            bytes_ = old.stat().st_size
            old.unlink()
            removed, size = removed + 1, size + bytes_
    return removed, size


__all__ = ["SEEDS", "clear", "needs_warming", "seed_of", "warm"]
