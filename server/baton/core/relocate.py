"""Placing a hunk where its lines still stand, when the user changed the file around them.

A three-way merge of line-based text calls two changes that touch adjacent lines a
conflict. A hunk that replaces lines the user did not change can still apply, as ``patch``
applies a hunk at an offset: :func:`relocate` maps the hunk's own lines from the text it was
computed against (``base``) to the user's text (``ours``) through the lines both have in
common, and replaces exactly those. A line the user changed is never overwritten: when
the hunk's lines are not all still there, unchanged and in one piece, it does not apply.
"""

from __future__ import annotations

from baton.core.diff import Hunk, split_lines
from baton.core.linediff import common_lines


def relocate(hunk: Hunk, base: str, ours: str) -> str | None:
    """``ours`` with ``hunk`` (computed against ``base``) applied where its lines now are;
    None when the user changed any of them (or the insertion point has no unchanged
    neighbour to hold on to)."""
    if hunk.whole_file:
        return None
    old, mine = split_lines(base), split_lines(ours)
    if hunk.old_count:
        start = hunk.old_start - 1
        if "".join(old[start : start + hunk.old_count]) != hunk.old_text:
            return None  # not a hunk of this base
        common = common_lines(old, mine)
        placed = [common.get(i) for i in range(start, start + hunk.old_count)]
        if None in placed:
            return None  # the user changed one of the hunk's lines
        first = placed[0]
        assert first is not None
        if placed != list(range(first, first + hunk.old_count)):
            return None  # the user put lines between them
        return "".join(mine[:first]) + hunk.new_text + "".join(mine[first + hunk.old_count :])
    # An insertion after base line ``old_start`` (0: at the top).
    if hunk.old_start == 0:
        return hunk.new_text + ours
    common = common_lines(old, mine)
    before = common.get(hunk.old_start - 1)
    if before is not None:
        at = before + 1
    else:
        after = common.get(hunk.old_start)
        if after is None:
            return None
        at = after
    return "".join(mine[:at]) + hunk.new_text + "".join(mine[at:])


def place(hunk: Hunk, base: str, ours: str) -> tuple[int, int] | None:
    """The lines of ``ours`` that stand at ``hunk``'s place: ``(first, end)`` (0-based, end
    excluded), from the nearest line before the hunk the user left unchanged to the nearest
    one after it. None when the hunk is not one of ``base`` (or is a whole-file change)."""
    if hunk.whole_file:
        return None
    old, mine = split_lines(base), split_lines(ours)
    start = hunk.old_start - 1 if hunk.old_count else hunk.old_start
    if "".join(old[start : start + hunk.old_count]) != hunk.old_text:
        return None
    common = common_lines(old, mine)
    before = [common[i] for i in range(start) if i in common]
    after = [common[i] for i in range(start + hunk.old_count, len(old)) if i in common]
    first = before[-1] + 1 if before else 0
    end = after[0] if after else len(mine)
    return first, max(first, end)


def overwrite(hunk: Hunk, base: str, ours: str) -> str | None:
    """``ours`` with the lines at ``hunk``'s place replaced by the hunk's new lines: "take
    theirs", which drops the user's edit of those lines (only when the user asks for it)."""
    where = place(hunk, base, ours)
    if where is None:
        return None
    mine = split_lines(ours)
    return "".join(mine[: where[0]]) + hunk.new_text + "".join(mine[where[1] :])


def at_place(hunk: Hunk, base: str, ours: str) -> str | None:
    """The text of the lines of ``ours`` at ``hunk``'s place (see :func:`place`)."""
    where = place(hunk, base, ours)
    if where is None:
        return None
    return "".join(split_lines(ours)[where[0] : where[1]])


def applies(hunk: Hunk, base: str, ours: str) -> bool:
    """Whether accept will bring ``hunk`` into ``ours`` without a conflict, as far as its
    own lines tell: the file is as it was, the hunk's lines still stand in one piece, or the
    user made the very same change there."""
    if ours == base or relocate(hunk, base, ours) is not None:
        return True
    return hunk.old_count > 0 and at_place(hunk, base, ours) == hunk.new_text
