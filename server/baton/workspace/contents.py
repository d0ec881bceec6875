"""What a file holds, as Baton compares and merges it: :class:`Content` (bytes, symlink or
not, executable or not), reading it, lines appended at its end, and the three-way merge of
two changes to one base (``git merge-file`` on memory-backed files)."""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from baton.workspace.git import git_process


@dataclass(frozen=True, slots=True)
class Content:
    """A file's content as Baton compares it: bytes, and whether it is a symlink."""

    data: bytes
    link: bool = False
    executable: bool = False


def same(a: Content | None, b: Content | None) -> bool:
    """Whether two contents are equal (both absent, or the same bytes and kind)."""
    if a is None or b is None:
        return a is None and b is None
    return a.data == b.data and a.link == b.link


def digest(content: Content | None) -> str | None:
    """``file:<sha256>`` or ``link:<sha256 of the target>``; None for no file."""
    if content is None:
        return None
    return ("link:" if content.link else "file:") + hashlib.sha256(content.data).hexdigest()


def read_content(target: Path) -> Content | None:
    """The file at ``target`` (a symlink as its target); None when missing or not a file."""
    try:
        st = os.lstat(target)
        if stat.S_ISLNK(st.st_mode):
            return Content(os.fsencode(os.readlink(target)), link=True)
        if not stat.S_ISREG(st.st_mode):
            return None
        return Content(target.read_bytes(), executable=bool(st.st_mode & 0o111))
    except OSError:
        return None


def appended(old: bytes, new: bytes) -> bytes | None:
    """The whole lines ``new`` adds at the end of ``old``, when that is all it changes."""
    if len(new) > len(old) and new.startswith(old) and (not old or old.endswith(b"\n")):
        return new[len(old) :]
    return None


def last_line(data: bytes) -> bytes:
    return data[data.rfind(b"\n", 0, len(data) - 1) + 1 :]


#: The three sides of a merge, as ``git merge-file`` labels them in a conflict.
SIDES = ("current", "snapshot", "task")


def merge_texts(ours: str, base: str, theirs: str) -> tuple[str, int]:
    """``git merge-file`` of three texts: the merged text and the number of conflicts.

    The texts reach git as memory-backed files (Linux memfds, read as ``/dev/fd/N``), so a
    broker killed during a merge leaves nothing on disk; elsewhere a temporary folder.
    """
    data = [t.encode("utf-8", "surrogateescape") for t in (ours, base, theirs)]
    labels = [arg for side in SIDES for arg in ("-L", side)]
    if not hasattr(os, "memfd_create"):
        with tempfile.TemporaryDirectory(prefix="baton-merge-") as tmp:
            names = [Path(tmp) / side for side in SIDES]
            for name, blob in zip(names, data, strict=True):
                name.write_bytes(blob)
            proc = git_process(
                ["merge-file", "-p", "--diff3", *labels, *map(str, names)],
                Path(tmp),
                ok_codes=range(128),
            )
    else:
        fds: list[int] = []
        try:
            for side, blob in zip(SIDES, data, strict=True):
                fds.append(os.memfd_create(f"baton-{side}", os.MFD_CLOEXEC))
                write_all(fds[-1], blob)
            proc = git_process(
                ["merge-file", "-p", "--diff3", *labels, *(f"/dev/fd/{fd}" for fd in fds)],
                Path(os.sep),
                ok_codes=range(128),
                pass_fds=fds,
            )
        finally:
            for fd in fds:
                os.close(fd)
    return proc.stdout.decode("utf-8", "surrogateescape"), proc.returncode


def fold(ours: Content, base: Content, theirs: Content) -> bytes | None:
    """``ours`` with the change from ``base`` to ``theirs`` brought in; None on conflict.

    Lines appended to ``base`` (on either side) are added at the end without running git,
    when the other side left the last line of ``base`` where it was.
    """
    if ours.link or base.link or theirs.link:
        return None
    for a, b in ((ours, theirs), (theirs, ours)):
        tail = appended(base.data, b.data)
        if tail is not None and a.data.endswith(last_line(base.data)):
            return a.data + tail
    try:
        mine, old, other = (x.data.decode("utf-8") for x in (ours, base, theirs))
    except UnicodeDecodeError:
        return None
    if "\0" in mine + old + other:
        return None
    merged, clashes = merge_texts(mine, old, other)
    return None if clashes else merged.encode("utf-8")


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
