"""The accept journal: what an accept is doing, on disk before any user file changes.

``accept(..., journal=path)`` plans every file first, then records here the hunks it
accepts and, for each file it will replace: the path, the digest of the content it was
planned against (``pre``; none for no file), the digest and size of its new content
(``post``, kept in the folder ``<journal>.d`` beside the journal), the name of the
temporary file it will use, and the hunks that file carries. The journal is written
atomically (a temporary file, flushed, renamed, the folder flushed) in Baton's state
folder; when it cannot be written (a full disk) :class:`JournalError` is raised and no
user file has been touched. A file whose new content must change while it is written (the
user saved meanwhile) has the journal revised before that content is written.

A broker that finds a journal left by a crash calls :func:`recover_accept`: it removes the
temporary files the journal names, then takes each file as it finds it — the new content
(or the new content with lines appended: done), the planned-against content (written now:
the accept is finished), anything else (the user changed it since: that file's hunks are
not applied, and the other files of the same change are put back). It can be run any number
of times, or be interrupted and run again, with the same end. The caller records the hunk
decisions, then calls :func:`clear_journal`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import hashlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.errors import BatonError
from baton.faults import crash_point
from baton.workspace.contents import Content, appended, digest, read_content
from baton.workspace.userfile import Landing, inside, land, sync_folder

_TEMP = re.compile(r"\..+\.baton-[0-9a-f]+\.tmp")


class JournalError(BatonError, OSError):
    """The accept journal could not be written (nothing in the user's files was changed)."""


@dataclass
class Entry:
    """One file an accept replaces, as its journal records it."""

    path: str
    pre: str | None
    post: str | None
    size: int
    temp: str
    hunks: list[str]
    text: bool = False
    executable: bool = False
    kept_pre: bool = False
    earlier: list[tuple[str | None, int]] = field(default_factory=list)

    @classmethod
    def of(cls, landing: Landing, *, keep_pre: bool) -> Entry:
        post = landing.post
        return cls(
            path=landing.path,
            pre=digest(landing.pre),
            post=digest(post),
            size=0 if post is None else len(post.data),
            temp=landing.temp,
            hunks=list(landing.hunks),
            text=landing.text,
            executable=post is not None and post.executable,
            kept_pre=keep_pre and landing.pre is not None,
        )

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "earlier": [list(e) for e in self.earlier]}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Entry:
        earlier = [(d, int(n)) for d, n in obj.pop("earlier", [])]
        return cls(**obj, earlier=earlier)


@dataclass
class Recovered:
    """What recovering an interrupted accept found: hunk ids applied and those not."""

    applied: list[str] = field(default_factory=list)
    not_applied: list[tuple[str, str]] = field(default_factory=list)


class AcceptJournal:
    """An accept's journal file and the folder of contents beside it."""

    def __init__(self, path: Path, root: str, groups: list[tuple[list[str], list[Entry]]]):
        self.path = path
        self.root = root
        self.groups = groups
        self._kept: set[str] = set()

    @property
    def folder(self) -> Path:
        return kept_folder(self.path)

    @classmethod
    def begin(cls, path: Path, root: Path, groups: Sequence[Sequence[Landing]]) -> AcceptJournal:
        """Write the journal of an accept about to replace the files of ``groups`` (the
        landings of one file's change each). Raises JournalError, leaving nothing behind."""
        if path.exists():
            raise JournalError(
                errno.EEXIST, f"an earlier accept's journal is still there: recover it ({path})"
            )
        book = cls(path, str(root), [])
        for landings in groups:
            multi = len(landings) > 1
            book.groups.append(
                (list(landings[0].hunks), [Entry.of(lnd, keep_pre=multi) for lnd in landings])
            )
        try:
            for landings in groups:
                for lnd in landings:
                    book._keep(lnd.post)
                    if len(landings) > 1:
                        book._keep(lnd.pre)
            book._save()
        except OSError as exc:
            with contextlib.suppress(OSError):
                shutil.rmtree(book.folder)
            raise JournalError(exc.errno, f"could not write the accept journal: {exc}") from exc
        return book

    def revise(self, group: int, index: int, landing: Landing) -> None:
        """Record the new content a file will get instead (before it is written)."""
        old = self.groups[group][1][index]
        entry = Entry.of(landing, keep_pre=old.kept_pre)
        entry.earlier = [*old.earlier, (old.post, old.size)]
        try:
            self._keep(landing.post)
            if old.kept_pre:
                self._keep(landing.pre)
            self.groups[group][1][index] = entry
            self._save()
        except OSError as exc:
            self.groups[group][1][index] = old
            raise JournalError(exc.errno, f"could not revise the accept journal: {exc}") from exc

    @classmethod
    def load(cls, path: Path) -> AcceptJournal:
        obj = json.loads(path.read_text(encoding="utf-8"))
        groups = [
            ([str(h) for h in g["hunks"]], [Entry.from_json(dict(e)) for e in g["files"]])
            for g in obj["groups"]
        ]
        return cls(path, str(obj["root"]), groups)

    def content(self, sha: str | None, *, executable: bool = False) -> Content | None:
        """A content the journal kept, by its digest (None: no file)."""
        if sha is None:
            return None
        kind, _, hexdigest = sha.partition(":")
        data = (self.folder / hexdigest).read_bytes()
        return Content(data, link=kind == "link", executable=executable)

    def _keep(self, content: Content | None) -> None:
        if content is None:
            return
        name = hashlib.sha256(content.data).hexdigest()
        if name not in self._kept:
            self.folder.mkdir(parents=True, exist_ok=True)
            _write_atomically(self.folder / name, content.data)
            self._kept.add(name)

    def _save(self) -> None:
        sync_folder(self.folder)
        obj = {
            "version": 1,
            "root": self.root,
            "hunks": [h for hunks, _ in self.groups for h in hunks],
            "groups": [
                {"hunks": hunks, "files": [e.to_json() for e in entries]}
                for hunks, entries in self.groups
            ],
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(self.path, json.dumps(obj, indent=1).encode())
        sync_folder(self.path.parent)


def kept_folder(journal: Path) -> Path:
    """The folder beside ``journal`` that keeps the contents it names."""
    return journal.with_name(journal.name + ".d")


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def clear_journal(journal: Path) -> None:
    """Remove an accept's journal and everything it kept (its decisions are stored)."""
    with contextlib.suppress(FileNotFoundError):
        journal.unlink()
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(kept_folder(journal))
    with contextlib.suppress(OSError):
        for stale in journal.parent.glob(f".{journal.name}.*.tmp"):
            stale.unlink()
    sync_folder(journal.parent)


def _state(book: AcceptJournal, entry: Entry, now: Content | None) -> str:
    """``done`` (the new content is there), ``pending`` (still the old one) or ``changed``."""
    sha = digest(now)
    if sha == entry.post:
        return "done"
    if sha == entry.pre:
        return "pending"
    for post, size in [(entry.post, entry.size), *entry.earlier]:
        if sha == post:
            return "done"
        if entry.text and now is not None and not now.link and post and len(now.data) > size:
            head = now.data[:size]
            if digest(Content(head)) == post and appended(head, now.data) is not None:
                return "done"  # the new content, with lines written after it
    return "changed"


def recover_accept(journal: Path, root: Path) -> Recovered | None:
    """Finish, or put back, the accept a crash interrupted; None when there is no journal.

    Returns the hunk ids now applied (to be marked accepted) and those not, with why.
    Safe to repeat: a second run (or a run after a crash inside this one) ends the same.
    """
    if not journal.exists():
        return None
    book = AcceptJournal.load(journal)
    for _, entries in book.groups:
        for entry in entries:
            target = inside(root, entry.path)
            if target is not None and _TEMP.fullmatch(entry.temp):
                with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                    (target.parent / entry.temp).unlink()
    out = Recovered()
    for g, (hunks, entries) in enumerate(book.groups):
        why = _settle(book, root, g, entries)
        if why is None:
            common = set.intersection(*(set(e.hunks) for e in entries))
            out.applied += [h for h in hunks if h in common]
            why = "it no longer fitted the file when it was accepted"
            out.not_applied += [(h, why) for h in hunks if h not in common]
        else:
            out.not_applied += [(h, why) for h in hunks]
    return out


def _settle(book: AcceptJournal, root: Path, g: int, entries: list[Entry]) -> str | None:
    """Bring one change's files to their new content; or, when one of them was changed
    since (or cannot be written), put the others back. None when done, else why not."""
    states = []
    for entry in entries:
        target = inside(root, entry.path)
        states.append("changed" if target is None else _state(book, entry, read_content(target)))
    why = next(
        (
            f"{e.path} was changed after the accept was interrupted"
            for e, s in zip(entries, states, strict=True)
            if s == "changed"
        ),
        None,
    )
    if why is None:
        for i, (entry, state) in enumerate(zip(entries, states, strict=True)):
            if state != "pending" or entry.pre == entry.post:
                continue
            target = inside(root, entry.path)
            assert target is not None
            landing = Landing(
                entry.path,
                pre=read_content(target),
                post=book.content(entry.post, executable=entry.executable),
                hunks=list(entry.hunks),
                temp=entry.temp,
                text=entry.text,
            )
            try:
                ended = land(root, landing, revise=functools.partial(book.revise, g, i))
            except OSError as exc:
                why = f"could not write {entry.path}: {exc}"
                break
            crash_point("accept_recover_file")
            if ended.dropped:
                why = ended.dropped[0][1]
                break
        if why is None and all(e.hunks for e in entries):
            return None
        why = why or "it no longer fitted the file when it was accepted"
    if len(entries) > 1:
        _put_back(book, root, entries)
    return why


def _put_back(book: AcceptJournal, root: Path, entries: list[Entry]) -> None:
    """Undo the files of a change that cannot be applied whole (their old content was kept)."""
    for entry in entries:
        target = inside(root, entry.path)
        if target is None or not entry.hunks or (entry.pre is not None and not entry.kept_pre):
            continue
        now = read_content(target)
        if _state(book, entry, now) != "done" or entry.pre == entry.post:
            continue
        back = Landing(entry.path, now, book.content(entry.pre), [], entry.temp, entry.text)
        with contextlib.suppress(OSError):
            land(root, back)
