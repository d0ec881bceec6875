"""Which side of a hunk a text holds at the hunk's place: its old lines, its new ones, or neither.

An accepted hunk is undone when the user's document holds the hunk's old lines again where
the hunk is (an editor's undo, or the lines typed back), and redone when it holds the new
ones there again. :func:`held` tells which, from the snapshot text the hunks were computed
against (``base``), the worker's whole result (``result``: every hunk of the file applied)
and the user's text now (``current``). A side is held when its lines stand in ``current``
unchanged, in one piece, with the lines around them (or the file's edge) right next to
them: nothing the user typed inside or beside the place counts as either side.

Two texts are lined up through the lines they have in common (a line diff), so where a
hunk's lines equal its neighbours the alignment can read both sides into the same text;
then neither is held (None), and nothing is decided on a guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from baton.core.diff import Hunk, split_lines
from baton.core.linediff import common_lines


class Side(StrEnum):
    OLD = "old"  # the snapshot's lines: the hunk is not in the text
    NEW = "new"  # the worker's lines: the hunk is in the text


class Placement:
    """One file's snapshot and result texts lined up with the user's text, for its hunks."""

    def __init__(self, base: str, result: str, current: str) -> None:
        self._base, self._result = split_lines(base), split_lines(result)
        self._current = split_lines(current)
        self._from_base = common_lines(self._base, self._current)
        self._from_result = common_lines(self._result, self._current)

    def held(self, hunk: Hunk) -> Side | None:
        """The side of ``hunk`` the user's text holds at its place, None for neither."""
        if hunk.whole_file:
            return None
        old_start = hunk.old_start - 1 if hunk.old_count else hunk.old_start
        new_start = hunk.new_start - 1 if hunk.new_count else hunk.new_start
        old_at = _place(self._from_base, old_start, hunk.old_count, self._base, self._current)
        new_at = _place(self._from_result, new_start, hunk.new_count, self._result, self._current)
        old_lines = self._base[old_start : old_start + hunk.old_count]
        new_lines = self._result[new_start : new_start + hunk.new_count]
        # (and the hunk is one of these texts: its lines are where it says)
        old = old_at is not None and "".join(old_lines) == hunk.old_text
        new = new_at is not None and "".join(new_lines) == hunk.new_text
        if old == new:  # neither, or an alignment that reads both: nothing to go on
            return None
        at, other = (old_at, new_lines) if old else (new_at, old_lines)
        empty = (hunk.old_count if old else hunk.new_count) == 0
        if empty and at is not None and other and self._beside(at, other):
            # An empty side "stands" wherever its neighbours meet; when the other side's
            # lines are right there too, repeated lines let both readings hold.
            return None
        return Side.OLD if old else Side.NEW

    def _beside(self, at: int, lines: Sequence[str]) -> bool:
        """``lines`` stand in the user's text right after or right before line ``at``."""
        k = len(lines)
        cur = self._current
        return cur[at : at + k] == list(lines) or (at >= k and cur[at - k : at] == list(lines))


def held(hunk: Hunk, base: str, result: str, current: str) -> Side | None:
    """The side of ``hunk`` that ``current`` holds at its place (see :class:`Placement`)."""
    return Placement(base, result, current).held(hunk)


def _place(
    mapping: dict[int, int], start: int, count: int, source: Sequence[str], target: Sequence[str]
) -> int | None:
    """Where lines ``start .. start+count`` of ``source`` stand in ``target`` in one piece,
    with their neighbours (or the text's edges) right beside them and nothing in between:
    the index in ``target`` of the first (of the point, for an empty side), or None."""
    if count:
        placed = [mapping.get(i) for i in range(start, start + count)]
        first = placed[0]
        if first is None or placed != list(range(first, first + count)):
            return None
    else:  # an empty side: the point between two lines
        if start < len(source):
            at = mapping.get(start)
            if at is None:
                return None
            first = at
        elif start > 0:
            before = mapping.get(start - 1)
            if before is None:
                return None
            first = before + 1
        else:  # both sides of an empty text
            return 0 if not target else None
    last = first + count  # one past the side's lines in target
    if start > 0:
        if mapping.get(start - 1) != first - 1:
            return None
    elif first != 0:
        return None
    if start + count < len(source):
        return first if mapping.get(start + count) == last else None
    return first if last == len(target) else None
