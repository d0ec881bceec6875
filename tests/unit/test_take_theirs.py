"""Take theirs and a redone hunk (issue 17: a real conflict offers keep mine, take theirs,
a merge view, or asking the agent to redo the hunk against the current file)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from baton.core.diff import Hunk
from baton.core.relocate import applies, at_place, overwrite, place
from baton.workspace.apply import merge_hunks
from tests.unit.test_relocate import hunk


@st.composite
def edited_inside(draw: st.DrawFn) -> tuple[list[str], Hunk, list[str], list[str], list[str]]:
    """Unique base lines, a hunk, a user text that changes the hunk's lines (and maybe
    others, never the ones right beside it): (base, hunk, ours, mine before, mine after),
    the user's lines before and after the hunk's place."""
    n = draw(st.integers(4, 30))
    base = [f"line {i}\n" for i in range(n)]
    start = draw(st.integers(1, n - 2))
    count = draw(st.integers(1, min(3, n - 1 - start)))
    new = [f"agent {i}\n" for i in range(draw(st.integers(0, 3)))]
    h = hunk(base, start, count, new)
    before, after = [], []
    for i in range(start - 1):  # the line right before the hunk stays
        if draw(st.booleans()):
            before.append(f"user changed {i}\n")
        else:
            before.append(base[i])
    before.append(base[start - 1])
    after.append(base[start + count])  # the line right after the hunk stays
    for i in range(start + count + 1, n):
        after.append(f"user changed {i}\n" if draw(st.booleans()) else base[i])
    inside = [f"user's own {k}\n" for k in range(draw(st.integers(0, 3)))]
    return base, h, before + inside + after, before, after


@settings(max_examples=300, deadline=None)
@given(edited_inside())
def test_take_theirs_replaces_only_the_lines_at_the_hunks_place(
    case: tuple[list[str], Hunk, list[str], list[str], list[str]],
) -> None:
    base, h, ours, before, after = case
    b, o = "".join(base), "".join(ours)
    assert overwrite(h, b, o) == "".join(before) + h.new_text + "".join(after)
    where = place(h, b, o)
    assert where == (len(before), len(ours) - len(after))
    assert at_place(h, b, o) == "".join(ours[len(before) : len(ours) - len(after)])


@settings(max_examples=200, deadline=None)
@given(edited_inside())
def test_a_conflict_is_said_beforehand_and_settled_only_as_asked(
    case: tuple[list[str], Hunk, list[str], list[str], list[str]],
) -> None:
    base, h, ours, before, after = case
    b, o = "".join(base), "".join(ours)
    merged, done, _ = merge_hunks(b, o, [h])
    assert applies(h, b, o) == (done == [h.id])  # the lens says what accept will do
    if done:
        return  # the user left the hunk's lines as they were, or made the same change
    assert merged == o
    mine = at_place(h, b, o)
    # the user's lines at the place changed since the agent was shown them: kept
    merged, done, _ = merge_hunks(b, o, [h], {h.id: (mine or "") + "x\n"})
    assert (merged, done) == (o, [])
    # as the agent was shown them, or "take theirs": replaced
    for wanted in (mine, None):
        merged, done, _ = merge_hunks(b, o, [h], {h.id: wanted})
        assert done == [h.id]
        assert merged == "".join(before) + h.new_text + "".join(after)
