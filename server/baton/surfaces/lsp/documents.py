"""Open documents, and positions between a task's snapshot text and the current document.

Hunks are computed against the snapshot; the user keeps typing. :class:`LineMap` maps
snapshot lines to current lines (through the equal blocks of a line diff) so that hunk
ranges are shown, and lenses placed, where the lines are now. :func:`text_edits` turns a
whole new text into the few edits that make it, so an accepted hunk is one small, undoable
change in the editor rather than a rewrite of the buffer.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote

from lsprotocol import types
from pygls import uris
from pygls.workspace.position_codec import PositionCodec

from baton.core.diff import split_lines
from baton.core.linediff import opcodes


def uri_to_path(uri: str) -> Path | None:
    """The local path of a ``file:`` URI, None for any other scheme (pygls' reading: a
    host is a UNC share, a drive letter loses its leading slash)."""
    path = uris.to_fs_path(uri)
    return Path(path) if path else None


def path_to_uri(path: Path | str) -> str:
    """A ``file:`` URI for an absolute path.

    Spelled as before rather than as :func:`pygls.uris.from_fs_path` would (it escapes
    ``:`` and ``@`` too): the clients see these URIs in ``baton/diff`` and the lenses, and
    both spellings read back to the same path (:func:`uri_to_path`).
    """
    text = Path(path).as_posix()
    if not text.startswith("/"):
        text = "/" + text
    return "file://" + quote(text, safe="/:@")


def relative_to(path: Path, root: Path) -> str | None:
    """``path`` relative to ``root`` in POSIX form, None when outside it."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None


@dataclass
class OpenDocuments:
    """Which open documents have unsaved changes (tracked from didChange / didSave)."""

    dirty: set[str] = field(default_factory=set)

    def opened(self, uri: str) -> None:
        self.dirty.discard(unquote(uri))

    def changed(self, uri: str) -> None:
        self.dirty.add(unquote(uri))

    def saved(self, uri: str) -> None:
        self.dirty.discard(unquote(uri))

    def closed(self, uri: str) -> None:
        self.dirty.discard(unquote(uri))


def units(text: str, encoding: str) -> int:
    """Length of ``text`` in the client's position units (pygls' position codec)."""
    return int(_codec(encoding).client_num_units(text))


_CODECS: dict[str, PositionCodec] = {}


def _codec(encoding: str) -> PositionCodec:
    codec = _CODECS.get(encoding)
    if codec is None:
        codec = _CODECS[encoding] = PositionCodec(encoding)
    return codec


def _strip_eol(line: str) -> str:
    return line.rstrip("\r\n")


def line_range(
    lines: Sequence[str], start: int, count: int, encoding: str = "utf-16"
) -> types.Range:
    """The range of ``count`` whole lines from 0-based ``start`` (line endings included).

    At the end of a text whose last line has no line ending, the range ends at the end of
    that line rather than on a line that does not exist.
    """
    end = start + count
    if end >= len(lines) and lines and not lines[-1].endswith(("\n", "\r")):
        last = len(lines) - 1
        if start > last:
            pos = types.Position(last, units(_strip_eol(lines[last]), encoding))
            return types.Range(pos, pos)
        return types.Range(
            types.Position(start, 0),
            types.Position(last, units(_strip_eol(lines[last]), encoding)),
        )
    return types.Range(types.Position(start, 0), types.Position(end, 0))


class LineMap:
    """Maps 0-based line numbers of an old text to those of a new one."""

    def __init__(self, old: Sequence[str], new: Sequence[str]) -> None:
        self.old, self.new = old, new
        if old == new:
            self._blocks = [(0, 0, len(old))]
        else:
            self._blocks = [
                (i1, j1, i2 - i1) for tag, i1, i2, j1, _ in opcodes(old, new) if tag == "equal"
            ]
        self._starts = [a for a, _, _ in self._blocks]

    def line(self, i: int) -> int | None:
        """Where old line ``i`` is now, None when the user changed or removed it."""
        k = bisect_right(self._starts, i) - 1
        if k >= 0:
            a, b, n = self._blocks[k]
            if a <= i < a + n:
                return b + (i - a)
        return None

    def boundary(self, i: int) -> int:
        """Where the boundary before old line ``i`` is now (best effort)."""
        if i <= 0:
            return 0
        before = self.line(i - 1)
        if before is not None:
            return before + 1
        at = self.line(i) if i < len(self.old) else None
        if at is not None:
            return at
        if i >= len(self.old):
            return len(self.new)
        k = bisect_right(self._starts, i) - 1
        if k < 0:
            return min(i, len(self.new))
        a, b, n = self._blocks[k]
        return min(b + n + (i - a - n), len(self.new))

    def span(self, start: int, count: int) -> tuple[int, int, bool]:
        """``(new start, new count, intact)`` of old lines ``start .. start+count``.

        ``intact`` is False when the user changed any of those lines (or the lines around
        an insertion point), which makes an accept of that hunk a three-way merge.
        """
        if count == 0:
            where = self.boundary(start)
            ok = (start == 0 or self.line(start - 1) is not None) and (
                start >= len(self.old) or self.line(start) is not None
            )
            return where, 0, ok
        first = self.line(start)
        mapped = [self.line(i) for i in range(start, start + count)]
        if first is not None and all(m == first + k for k, m in enumerate(mapped)):
            return first, count, True
        present = [m for m in mapped if m is not None]
        if present:
            return present[0], present[-1] - present[0] + 1, False
        return self.boundary(start), 0, False


def text_edits(old: str, new: str, encoding: str = "utf-16") -> list[types.TextEdit]:
    """Line-granular edits turning ``old`` into ``new`` (ranges in ``old``)."""
    a, b = split_lines(old), split_lines(new)
    return [
        types.TextEdit(range=line_range(a, i1, i2 - i1, encoding), new_text="".join(b[j1:j2]))
        for tag, i1, i2, j1, j2 in opcodes(a, b)
        if tag != "equal"
    ]


def apply_text_edits(text: str, edits: Sequence[types.TextEdit]) -> str:
    """Apply line-based edits (as made by :func:`text_edits`, utf-32 units) to ``text``."""
    lines = split_lines(text)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(pos: types.Position) -> int:
        if pos.line >= len(lines):
            return len(text)
        return offsets[pos.line] + pos.character

    out = text
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character))[::-1]:
        out = out[: offset(edit.range.start)] + edit.new_text + out[offset(edit.range.end) :]
    return out
