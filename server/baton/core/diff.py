"""FileDiff and Hunk: a worker's change against the snapshot, hunk by hunk, with stable ids.

Hunks carry zero lines of context: each is one contiguous block of removed and added lines,
so each can be accepted or rejected on its own. Texts keep their line endings (CRLF stays CRLF).

A diff that is stored or shown has its secret values masked (:func:`mask_diff`): a hunk whose
new text held one is flagged ``secret``; the real text is only ever read back from git
(:func:`reveal` pairs it with the masked hunk).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from baton.core.linediff import opcodes
from baton.core.masking import MASK, mask_text, prepare


class HunkState(StrEnum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"


class FileStatus(StrEnum):
    MODIFIED = "modified"
    ADDED = "added"
    DELETED = "deleted"
    RENAMED = "renamed"


@dataclass(frozen=True, slots=True)
class Hunk:
    """One block of change. Lines are 1-based; ``old_count == 0`` inserts after ``old_start``.

    ``whole_file`` hunks stand for a change that is taken or left as one piece (an added,
    deleted, renamed or binary file).
    """

    id: str
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    old_text: str
    new_text: str
    state: HunkState = HunkState.PENDING
    whole_file: bool = False
    secret: bool = False  # its new text held a secret value (masked here)

    def to_json(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "oldStart": self.old_start,
            "oldCount": self.old_count,
            "newStart": self.new_start,
            "newCount": self.new_count,
            "oldText": self.old_text,
            "newText": self.new_text,
            "state": str(self.state),
            "wholeFile": self.whole_file,
        }
        if self.secret:
            out["secret"] = True
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Hunk:
        return cls(
            id=str(obj["id"]),
            old_start=int(obj["oldStart"]),
            old_count=int(obj["oldCount"]),
            new_start=int(obj["newStart"]),
            new_count=int(obj["newCount"]),
            old_text=str(obj["oldText"]),
            new_text=str(obj["newText"]),
            state=HunkState(obj.get("state", "pending")),
            whole_file=bool(obj.get("wholeFile", False)),
            secret=bool(obj.get("secret", False)),
        )


@dataclass(frozen=True, slots=True)
class FileDiff:
    """The change to one file. ``path`` is the new path (POSIX, relative to the root)."""

    path: str
    status: FileStatus
    hunks: tuple[Hunk, ...] = ()
    old_path: str | None = None
    binary: bool = False
    added: int = 0
    removed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "oldPath": self.old_path,
            "status": str(self.status),
            "binary": self.binary,
            "added": self.added,
            "removed": self.removed,
            "hunks": [h.to_json() for h in self.hunks],
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> FileDiff:
        return cls(
            path=str(obj["path"]),
            old_path=obj.get("oldPath"),
            status=FileStatus(obj["status"]),
            binary=bool(obj.get("binary", False)),
            added=int(obj.get("added", 0)),
            removed=int(obj.get("removed", 0)),
            hunks=tuple(Hunk.from_json(h) for h in obj.get("hunks", [])),
        )


def hunk_id(path: str, old_text: str, new_text: str, ordinal: int = 0) -> str:
    """Stable id: the same change to the same file gets the same id in every recomputation."""
    h = hashlib.blake2s(digest_size=5)
    for part in (path, old_text, new_text, str(ordinal)):
        h.update(part.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
    return h.hexdigest()


def old_span(hunk: Hunk) -> tuple[int, int]:
    """The 0-based first line and the count of the snapshot lines a hunk replaces (an
    insertion: where it goes, and 0)."""
    start = hunk.old_start - 1 if hunk.old_count else hunk.old_start
    return max(start, 0), hunk.old_count


def split_lines(text: str) -> list[str]:
    """Lines with their endings kept (``\\n``, ``\\r\\n``; a last line may have none)."""
    return text.splitlines(keepends=True) if text else []


def compute_hunks(path: str, old_text: str, new_text: str) -> tuple[Hunk, ...]:
    """Zero-context hunks turning ``old_text`` into ``new_text``."""
    a, b = split_lines(old_text), split_lines(new_text)
    hunks: list[Hunk] = []
    seen: dict[tuple[str, str], int] = {}
    for tag, i1, i2, j1, j2 in opcodes(a, b):
        if tag == "equal":
            continue
        old, new = "".join(a[i1:i2]), "".join(b[j1:j2])
        ordinal = seen.get((old, new), 0)
        seen[(old, new)] = ordinal + 1
        hunks.append(
            Hunk(
                id=hunk_id(path, old, new, ordinal),
                # git's convention: for a pure insertion old_start is the line it follows.
                old_start=i1 + 1 if i2 > i1 else i1,
                old_count=i2 - i1,
                new_start=j1 + 1 if j2 > j1 else j1,
                new_count=j2 - j1,
                old_text=old,
                new_text=new,
            )
        )
    return tuple(hunks)


def whole_file_hunk(path: str, old_text: str, new_text: str, *, tag: str = "") -> Hunk:
    a, b = split_lines(old_text), split_lines(new_text)
    return Hunk(
        id=hunk_id(path, old_text, new_text, 0) if not tag else hunk_id(path, tag, new_text, 0),
        old_start=1 if a else 0,
        old_count=len(a),
        new_start=1 if b else 0,
        new_count=len(b),
        old_text=old_text,
        new_text=new_text,
        whole_file=True,
    )


def apply_hunks(old_text: str, hunks: Iterable[Hunk]) -> str:
    """``old_text`` with the given hunks (computed against it) applied, others left out."""
    lines = split_lines(old_text)
    out: list[str] = []
    pos = 0  # index into lines of the next line not yet copied
    for h in sorted(hunks, key=lambda h: (h.old_start, h.old_count)):
        start = h.old_start - 1 if h.old_count else h.old_start
        if start < pos:
            raise ValueError(f"hunk {h.id} overlaps an earlier hunk")
        if "".join(lines[start : start + h.old_count]) != h.old_text:
            raise ValueError(f"hunk {h.id} does not match the text it was computed against")
        out.extend(lines[pos:start])
        out.append(h.new_text)
        pos = start + h.old_count
    out.extend(lines[pos:])
    return "".join(out)


def with_states(files: Sequence[FileDiff], decisions: dict[str, HunkState]) -> list[FileDiff]:
    """The same files with each hunk's state taken from ``decisions`` (id → state)."""
    return [
        replace(f, hunks=tuple(replace(h, state=decisions.get(h.id, h.state)) for h in f.hunks))
        for f in files
    ]


def count_lines(hunks: Iterable[Hunk]) -> tuple[int, int]:
    added = removed = 0
    for h in hunks:
        added += h.new_count
        removed += h.old_count
    return added, removed


def mask_diff(files: Sequence[FileDiff], values: Iterable[str]) -> list[FileDiff]:
    """``files`` with every secret value in their hunks masked (line breaks kept).

    A hunk whose new text held one is flagged ``secret``. A hunk whose text changed gets
    an id of its masked text (so no id is derived from a secret), the same for the same
    change every time; other hunks are left as they are.
    """
    prepared = prepare(values)
    if not prepared:
        return list(files)
    out: list[FileDiff] = []
    for f in files:
        seen: dict[tuple[str, str], int] = {}
        hunks: list[Hunk] = []
        for h in f.hunks:
            old, new = mask_text(h.old_text, prepared), mask_text(h.new_text, prepared)
            if (old, new) == (h.old_text, h.new_text):
                hunks.append(h)
                continue
            ordinal = seen.get((old, new), 0)
            seen[(old, new)] = ordinal + 1
            hid = hunk_id(f.path, f"{MASK} {old}", new, ordinal)
            hunks.append(replace(h, id=hid, old_text=old, new_text=new, secret=new != h.new_text))
        out.append(replace(f, hunks=tuple(hunks)))
    return out


def reveal(
    shown: Sequence[FileDiff], real: Sequence[FileDiff], values: Iterable[str]
) -> list[FileDiff]:
    """The files of ``shown`` (a masked diff, with decisions) whose masked hunks get their real
    text from ``real`` (the same diff computed again from git, unmasked), keeping their ids
    and states; a hunk ``real`` does not have any more is left masked. A file with a masked
    hunk takes ``real``'s file (what accept needs to find its content in git)."""
    masked = {f.path: f for f in mask_diff(real, values)}
    by_path = {f.path: f for f in real}
    out: list[FileDiff] = []
    for f in shown:
        ours, theirs = masked.get(f.path), by_path.get(f.path)
        if ours is None or theirs is None or len(ours.hunks) != len(theirs.hunks):
            out.append(f)
            continue
        originals = {m.id: r for m, r in zip(ours.hunks, theirs.hunks, strict=True)}
        hunks = []
        for h in f.hunks:
            found = originals.get(h.id)
            changed = found is not None and found.id != h.id
            if found is not None and changed:
                h = replace(found, id=h.id, state=h.state, secret=h.secret)
            hunks.append(h)
        out.append(replace(theirs, hunks=tuple(hunks)) if hunks != list(f.hunks) else f)
    return out


def find_hunk(files: Sequence[FileDiff], hunk: str) -> tuple[FileDiff, Hunk] | None:
    """Find a hunk by id or by unambiguous id prefix."""
    matches = [(f, h) for f in files for h in f.hunks if h.id == hunk or h.id.startswith(hunk)]
    exact = [(f, h) for f, h in matches if h.id == hunk]
    if exact:
        return exact[0]
    return matches[0] if len(matches) == 1 else None
