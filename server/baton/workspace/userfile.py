"""Replacing one of the user's files without losing what another writer saves meanwhile.

A file Baton changes is replaced, never edited in place: the new content goes to a
temporary file beside it (``.<name>.baton-<hex>.tmp``, in the same folder so the rename is
atomic), is flushed to disk, and is renamed over the file. Around the rename the file is
checked against the content the new one was merged against (a :class:`Landing`'s ``pre``),
through a descriptor kept open on the file's inode:

- just before: the file is read again (reopened when its name now points at another
  inode, as after an editor's save by rename). Lines appended meanwhile are added to the
  temporary file and the file read again, until it holds still (microseconds a round);
- the rename itself swaps the two names where the system can (Linux ``renameat2``), so
  the file displaced is exactly the one inspected next, even if it was replaced an instant
  before; elsewhere it is a plain rename;
- just after: the displaced file is read through the descriptor, for anything a writer
  that still had it open wrote after the last read.

A change found either way is brought into the new content — lines appended at the end are
copied in as they are; anything else goes through the landing's re-merge, or ``git
merge-file`` — and the write is tried again, at most :data:`TRIES` times; then the file is
left as the user has it and its hunks are reported. A change the new content cannot take
(a conflict, a binary file) leaves the user's version in place. What no check can see: a
writer that opened the file before the rename and writes into it after the last read of
the displaced file (its write goes to a file no longer in the tree). No temporary file
survives :func:`land`, whatever happens in it (a ``kill -9`` aside: the accept journal
names them).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import errno
import os
import secrets
import stat
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from baton.faults import crash_point
from baton.workspace.contents import (
    Content,
    appended,
    fold,
    last_line,
    same,
    write_all,
)

#: How many times a file that keeps changing is merged and written again before giving up.
TRIES = 12

#: How many times lines appended meanwhile are added to a written temporary file before
#: the whole file is merged and written again (each round takes microseconds).
CATCH_UP = 200

#: The user's new text and the hunk ids still to bring → (merged text, ids merged,
#: (id, reason) of each that no longer fits).
Remerge = Callable[[str, Sequence[str]], tuple[str, list[str], list[tuple[str, str]]]]


def temp_name(name: str) -> str:
    """A fresh name for the temporary file that will replace the file called ``name``."""
    return f".{name}.baton-{secrets.token_hex(6)}.tmp"


def inside(root: Path, path: str) -> Path | None:
    """``root / path`` when its folder resolves inside ``root`` (no symlinked escape)."""
    target = root / path
    try:
        target.parent.resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return None
    return target


@dataclass
class Landing:
    """One user file to replace: the content it was planned against and its new content.

    ``pre`` and ``post`` are None for no file (create, delete). ``hunks`` are the ids the
    new content carries; those that could not be kept move to ``dropped`` with a reason.
    ``temp`` is the temporary file's name in the target's folder. ``text`` allows lines
    another writer appends to be carried into the new content; ``remerge`` brings the
    hunks into a new text of the user's file (when None, :func:`fold` does).
    """

    path: str
    pre: Content | None
    post: Content | None
    hunks: list[str]
    temp: str
    text: bool = False
    dropped: list[tuple[str, str]] = field(default_factory=list)
    remerge: Remerge | None = None

    def giving_up(self, now: Content | None, why: str) -> Landing:
        """This landing leaving the file as ``now``, every hunk dropped for ``why``."""
        lost = [(h, why) for h in self.hunks]
        return dataclasses.replace(
            self, pre=now, post=now, hunks=[], dropped=self.dropped + lost, remerge=None
        )


class _Held:
    """The user's file as last read, through a descriptor on its inode (regular files)."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.fd: int | None = None
        self.key: tuple[int, int] | None = None
        self.mode: int | None = None

    def read(self) -> Content | None:
        """Read the file the name points at now (reopened when it is another inode)."""
        try:
            st = os.lstat(self.target)
        except FileNotFoundError:
            self.close()
            return None
        key = (st.st_dev, st.st_ino)
        if stat.S_ISLNK(st.st_mode):
            self.close()
            return Content(os.fsencode(os.readlink(self.target)), link=True)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{self.target.name} is not a regular file")
        if self.fd is None or key != self.key:
            self.close()
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
            self.fd = os.open(self.target, flags)
            fst = os.fstat(self.fd)
            self.key, self.mode = (fst.st_dev, fst.st_ino), fst.st_mode
        assert self.mode is not None
        return Content(self._read(self.fd), executable=bool(self.mode & 0o111))

    def displaced(self, path: Path) -> None:
        """After a swap of names: hold the file now at ``path`` if it is not the one held
        (it took the held one's place after the last read)."""
        st = os.lstat(path)
        if (st.st_dev, st.st_ino) == self.key or not stat.S_ISREG(st.st_mode):
            return
        self.close()
        self.fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        fst = os.fstat(self.fd)
        self.key, self.mode = (fst.st_dev, fst.st_ino), fst.st_mode

    def late(self) -> Content | None:
        """The inode last read, read again (None when none is held: no file, a symlink)."""
        if self.fd is None or self.mode is None:
            return None
        return Content(self._read(self.fd), executable=bool(self.mode & 0o111))

    @staticmethod
    def _read(fd: int) -> bytes:
        chunks, offset = [], 0
        while chunk := os.pread(fd, 1 << 20, offset):
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
        self.fd = self.key = self.mode = None


def _write_temp(tmp: Path, content: Content, mode: int | None) -> int | None:
    """Write and flush the temporary file; returns a descriptor open on its end (a
    regular file) to add lines to, which the caller closes."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    if content.link:
        os.symlink(os.fsdecode(content.data), tmp)
        return None
    # A new file gets the usual permissions: the kernel applies the umask to these.
    fresh = 0o777 if content.executable else 0o666
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    fd = os.open(tmp, flags, fresh if mode is None else 0o600)
    try:
        write_all(fd, content.data)
        if mode is not None:
            os.fchmod(fd, stat.S_IMODE(mode))
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def sync_folder(folder: Path) -> None:
    """Flush a folder's entries (a rename or unlink in it) to disk, where that is possible."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _with_appended(landing: Landing, now: Content | None) -> Landing | None:
    """``landing`` with the lines ``now`` appended to its ``pre`` added to its new content;
    None when ``now`` is more than that. The lines go after the new content's last line
    when that still is the file's last line, or when the new content only added lines
    itself (its lines, then these)."""
    pre, post = landing.pre, landing.post
    if not landing.text or now is None or pre is None or post is None or now.link:
        return None
    tail = appended(pre.data, now.data)
    if tail is None or not (
        post.data.endswith(last_line(pre.data)) or appended(pre.data, post.data) is not None
    ):
        return None
    return dataclasses.replace(
        landing, pre=now, post=dataclasses.replace(post, data=post.data + tail)
    )


def _rebase(landing: Landing, now: Content | None) -> tuple[Landing, bool]:
    """``landing`` brought onto the file as it is ``now``, and whether that is more than
    lines appended (so a journal must learn the new content before it is written)."""
    if same(now, landing.post):
        return dataclasses.replace(landing, pre=now), False
    pre, post = landing.pre, landing.post
    why = f"{landing.path} was changed while it was being accepted"
    if not landing.text or now is None or pre is None or post is None or now.link:
        return landing.giving_up(now, why), True
    grown_by_lines = _with_appended(landing, now)
    if grown_by_lines is not None:
        return grown_by_lines, False
    if landing.remerge is None:
        merged = fold(now, pre, post)
        if merged is None:
            return landing.giving_up(now, f"{why}, and the changes conflict"), True
        grown = dataclasses.replace(post, data=merged)
        return dataclasses.replace(landing, pre=now, post=grown), True
    try:
        text = now.data.decode("utf-8")
    except UnicodeDecodeError:
        return landing.giving_up(now, f"{landing.path} is no longer text"), True
    merged_text, done, clashes = landing.remerge(text, landing.hunks)
    dropped = landing.dropped + clashes
    if not done:
        return dataclasses.replace(landing, pre=now, post=now, hunks=[], dropped=dropped), True
    data = dataclasses.replace(post, data=merged_text.encode("utf-8", "surrogateescape"))
    return dataclasses.replace(landing, pre=now, post=data, hunks=done, dropped=dropped), True


def _after(landing: Landing, seen: Content | None, late: Content) -> Landing:
    """The next landing when ``late`` was written into the replaced file after it was read
    as ``seen``: the new content with that change brought in, or the user's version back."""
    written = landing.post
    if landing.text and written is not None and seen is not None:
        merged = fold(written, seen, late)
        if merged is not None:
            post = dataclasses.replace(written, data=merged)
            return dataclasses.replace(landing, pre=written, post=post, remerge=None)
    back = landing.giving_up(written, f"{landing.path} was changed while it was being written")
    return dataclasses.replace(back, post=late)


def land(
    root: Path, landing: Landing, *, revise: Callable[[Landing], None] | None = None
) -> Landing:
    """Make the file ``landing.path`` under ``root`` hold ``landing.post``, carefully.

    Returns the landing as it ended: the file now holds its ``post`` and carries its
    ``hunks``; hunks it could not keep are in ``dropped`` (the file then keeps the
    user's version). ``revise`` is called with a landing whose content changed beyond
    appended lines, before that content is written. Raises OSError when the file cannot
    be written (it is then left as it was).
    """
    target = inside(root, landing.path)
    if target is None:
        raise OSError(f"{landing.path} leads outside the workspace")
    tmp = target.parent / landing.temp
    held = _Held(target)
    try:
        seen = held.read()
        for _ in range(TRIES):
            if not same(seen, landing.pre):
                landing, revised = _rebase(landing, seen)
                if revised and revise is not None:
                    revise(landing)
            if same(seen, landing.post):
                return landing
            if landing.post is None:
                now = held.read()
                if not same(now, seen):
                    seen = now
                    continue
                os.unlink(target)
                sync_folder(target.parent)
                _prune(root, target.parent)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                landing, now, put = _replace(held, tmp, landing, seen)
                seen = now
                if not put:
                    continue
                sync_folder(target.parent)
            late = held.late()
            if late is None or same(late, seen):
                return landing
            landing = _after(landing, seen, late)
            if revise is not None:
                with contextlib.suppress(OSError):  # the file must get ``late`` back anyway
                    revise(landing)
            seen = held.read()
        return landing.giving_up(
            seen, f"{landing.path} kept changing while it was being accepted: accept it again"
        )
    finally:
        held.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _replace(
    held: _Held, tmp: Path, landing: Landing, seen: Content | None
) -> tuple[Landing, Content | None, bool]:
    """Write ``landing.post`` to ``tmp`` and rename it over the file, if the file still is
    ``seen`` by then; lines appended to it meanwhile are added to ``tmp`` first (without
    a new flush of the whole file: the added lines are flushed after the rename).
    Returns the landing as written, the file as last read, and whether it was renamed."""
    assert landing.post is not None
    fd = _write_temp(tmp, landing.post, held.mode)
    try:
        crash_point("accept_temp")
        for _ in range(CATCH_UP):
            now = held.read()
            if same(now, seen):
                break
            grown = None if fd is None else _with_appended(landing, now)
            if fd is None or grown is None or grown.post is None or landing.post is None:
                return landing, now, False
            write_all(fd, grown.post.data[len(landing.post.data) :])
            landing, seen = grown, now
        else:
            return landing, held.read(), False
        if not _put(tmp, held, seen):
            return landing, held.read(), False
        if fd is not None:
            os.fsync(fd)  # the lines added after the first flush
        return landing, seen, True
    finally:
        if fd is not None:
            os.close(fd)


def _put(tmp: Path, held: _Held, seen: Content | None) -> bool:
    """Rename ``tmp`` over the held file; False when it is not there as ``seen`` expects.

    Where there was no file, only if there still is none (a hard link cannot replace one).
    Over a file, the two names are swapped atomically where the system can (Linux): the
    file displaced is then held in place of the one last read, so :meth:`_Held.late`
    sees whatever took its place in the meantime (an editor's save by rename)."""
    target = held.target
    if seen is None:
        try:
            os.link(tmp, target, follow_symlinks=False)
        except FileExistsError:
            return False
        except OSError:  # a file system without hard links
            if os.path.lexists(target):
                return False
            os.replace(tmp, target)
            return True
        os.unlink(tmp)
        return True
    try:
        swapped = _exchange(tmp, target)
    except FileNotFoundError:  # removed meanwhile
        return False
    if not swapped:
        os.replace(tmp, target)
        return True
    held.displaced(tmp)
    os.unlink(tmp)
    return True


_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (``renameat2``); False where that is not available."""
    call = getattr(_LIBC, "renameat2", None)
    if call is None:
        return False
    if call(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EPERM):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _prune(root: Path, folder: Path) -> None:
    """Remove ``folder`` and its parents up to ``root`` while they are empty."""
    while folder != root and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent
