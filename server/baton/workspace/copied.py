"""A small task's checkout copied from the files its snapshot was just taken of, in-process.

A fresh checkout is ``git reset --hard``: a git process that reads every blob of the tree
from the object store and writes the files and the index. Right after a snapshot, the same
bytes are at hand without git: the snapshot staged the user's files as they are on disk
(their bytes unchanged, :func:`~baton.workspace.snapshot.stage_work_tree`) and the unsaved
buffers from the editor's texts. :func:`copy_checkout` writes each entry of the snapshot's
index from there — and only when the bytes it read hash to the entry's blob, so a file the
user changed since the snapshot is never taken for its snapshot — then the checkout's index
(its stat data read from the files just written, as git records them) and the branch, as
``reset --hard`` leaves them (the branch packed, which makes no folders, and no reflog).
Anything it does not write exactly as git would
(another kind of entry than a file or a symbolic link, a path git would refuse, a hash
other than SHA-1, a tree too big to be worth it) makes it say False, and git is run as
before.
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from baton.errors import BatonError

#: Up to this many entries a checkout is copied; above, the pool (or git) is quicker.
COPY_MAX_FILES = 1000
#: Up to this many bytes in all: a large tree is streamed by git, not read into memory.
COPY_MAX_BYTES = 32 << 20
_REGULAR = {"100644": 0o666, "100755": 0o777}
_SYMLINK = "120000"
_ENTRY = struct.Struct(">10L20sH")
_NAME_MASK = 0x0FFF
_U32 = 0xFFFFFFFF


@dataclass(frozen=True)
class Staged:
    """What a snapshot was made of, kept in this process only: every entry of its index
    (path → mode and blob) and the unsaved texts staged over the files (path → bytes)."""

    entries: Mapping[str, tuple[str, str]]
    overlays: Mapping[str, bytes] = field(default_factory=dict)


class _Unfit(BatonError):
    """The entry cannot be copied as git would write it."""


def _blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _checked_name(path: str) -> bytes:
    """``path`` as the index stores it, when git would write such a path in a work tree."""
    raw = path.encode("utf-8", "surrogateescape")
    parts = raw.split(b"/")
    if any(p in (b"", b".", b"..") or p.lower() == b".git" for p in parts) or b"\0" in raw:
        raise _Unfit(f"a path git does not check out: {path!r}")
    return raw


def _read_regular(source: bytes, budget: int) -> bytes:
    """The bytes of the regular file ``source`` (not through a symbolic link, and never a
    FIFO or a device opened: that could block or act)."""
    before = os.lstat(source)
    if not stat.S_ISREG(before.st_mode) or before.st_size > budget:
        raise _Unfit("not a regular file, or too big to copy")
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino) or st.st_size > budget:
            raise _Unfit("the file changed while it was opened")
        chunks = []
        while chunk := os.read(fd, max(st.st_size, 1 << 16)):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _write_regular(target: bytes, data: bytes, perm: int) -> os.stat_result:
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, perm)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        return os.fstat(fd)
    finally:
        os.close(fd)


def _index_entry(name: bytes, mode: str, sha: str, st: os.stat_result) -> bytes:
    """One version-2 index entry: the stat data git records, the mode, the blob, the name."""
    head = _ENTRY.pack(
        int(st.st_ctime) & _U32, st.st_ctime_ns % 1_000_000_000,
        int(st.st_mtime) & _U32, st.st_mtime_ns % 1_000_000_000,
        st.st_dev & _U32, st.st_ino & _U32, int(mode, 8),
        st.st_uid & _U32, st.st_gid & _U32, st.st_size & _U32,
        bytes.fromhex(sha), min(len(name), _NAME_MASK),
    )  # fmt: skip
    pad = 8 - (len(head) + len(name)) % 8  # 1 to 8 NULs
    return head + name + b"\0" * pad


def index_bytes(entries: list[bytes]) -> bytes:
    """A version-2 index file of ``entries`` (made by :func:`_index_entry`, in path order)."""
    body = struct.pack(">4sLL", b"DIRC", 2, len(entries)) + b"".join(entries)
    return body + hashlib.sha1(body, usedforsecurity=False).digest()


def copy_checkout(staged: Staged, source: Path, path: Path, commit: str, branch: str) -> bool:
    """Write the files of the snapshot ``commit`` (made of ``staged``, from the work tree at
    ``source``) into the new checkout at ``path``, whose repository's HEAD names ``branch``
    and has nothing else yet; its index and the branch at ``commit`` too. True when it is
    done; False when git must make it (what was written is then left for the caller to
    remove)."""
    if sys.platform != "linux" or len(commit) != 40 or sys.getfilesystemencoding() != "utf-8":
        return False
    if len(staged.entries) > COPY_MAX_FILES:
        return False
    own = path / ".git"
    src, dst = os.fsencode(source), os.fsencode(path)
    budget = COPY_MAX_BYTES
    made: set[bytes] = {b""}
    written: list[bytes] = []
    try:
        for name, mode, sha in sorted(
            (_checked_name(p), m, s) for p, (m, s) in staged.entries.items()
        ):
            folder = name.rpartition(b"/")[0]
            if folder not in made:
                at = b""
                for part in folder.split(b"/"):
                    at = at + b"/" + part if at else part
                    if at not in made:
                        os.mkdir(dst + b"/" + at)  # fails on anything in the way
                        made.add(at)
            target = dst + b"/" + name
            text = name.decode("utf-8", "surrogateescape")
            if mode in _REGULAR:
                data = staged.overlays.get(text)
                if data is None:
                    data = _read_regular(src + b"/" + name, budget)
                budget -= len(data)
                if budget < 0 or _blob_sha(data) != sha:
                    raise _Unfit(f"{text} is not as its snapshot holds it")
                st = _write_regular(target, data, _REGULAR[mode])
            elif mode == _SYMLINK and text not in staged.overlays:
                link = os.readlink(src + b"/" + name)
                if _blob_sha(link) != sha:
                    raise _Unfit(f"{text} is not as its snapshot holds it")
                os.symlink(link, target)
                st = os.lstat(target)
            else:
                raise _Unfit(f"{text}: an entry of mode {mode} is left to git")
            written.append(_index_entry(name, mode, sha, st))
    except (_Unfit, OSError, ValueError):
        return False
    # Whole, or no branch: its ref comes last, as one line of ``packed-refs`` (no folders
    # to make); a checkout cut short there has no HEAD and is made again.
    (own / "index").write_bytes(index_bytes(written))
    (own / "packed-refs").write_bytes(f"{commit} refs/heads/{branch}\n".encode())
    return True


__all__ = ["COPY_MAX_FILES", "Staged", "copy_checkout", "index_bytes"]
