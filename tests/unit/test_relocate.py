"""Placing a hunk where its lines still stand (issue 17: an edit next to a hunk blocked it)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from baton.core.diff import Hunk, split_lines
from baton.core.relocate import relocate
from baton.workspace.apply import merge_hunks


def hunk(base: list[str], start: int, count: int, new: list[str]) -> Hunk:
    """A hunk replacing ``base[start:start + count]`` (0-based) with ``new``."""
    return Hunk(
        id="h1",
        old_start=start + 1 if count else start,
        old_count=count,
        new_start=start + 1,
        new_count=len(new),
        old_text="".join(base[start : start + count]),
        new_text="".join(new),
    )


@st.composite
def edited_around(draw: st.DrawFn) -> tuple[list[str], Hunk, list[str], list[str]]:
    """Unique base lines, a hunk, and a user text that changes only lines outside it."""
    n = draw(st.integers(3, 30))
    base = [f"line {i}\n" for i in range(n)]
    start = draw(st.integers(0, n - 1))
    count = draw(st.integers(1, min(4, n - start)))
    new = [f"agent {i}\n" for i in range(draw(st.integers(0, 3)))]
    h = hunk(base, start, count, new)
    ours: list[str] = []
    for i, line in enumerate(base):
        inside = start <= i < start + count
        if not inside and draw(st.booleans()):
            choice = draw(st.sampled_from(["change", "delete", "insert"]))
            if choice == "change":
                ours.append(f"user changed {i}\n")
            elif choice == "insert":
                ours += [f"user added before {i}\n", line]
            continue  # delete
        ours.append(line)
        if inside and i == start + count - 1 and draw(st.booleans()):
            ours.append("user added right after the hunk\n")
    expected = []
    i = 0
    while i < len(ours):
        if ours[i : i + count] == base[start : start + count]:
            expected += new
            i += count
        else:
            expected.append(ours[i])
            i += 1
    return base, h, ours, expected


@settings(max_examples=300, deadline=None)
@given(edited_around())
def test_a_hunk_applies_wherever_its_lines_still_stand_unchanged(
    case: tuple[list[str], Hunk, list[str], list[str]],
) -> None:
    base, h, ours, expected = case
    assert relocate(h, "".join(base), "".join(ours)) == "".join(expected)


@st.composite
def anything(draw: st.DrawFn) -> tuple[str, Hunk, str]:
    """Repetitive texts (few distinct lines, CRLF, no final newline) and any user edit."""
    alphabet = st.sampled_from(["a\n", "b\n", "\n", "}\n", "a\r\n", "x"])
    base = draw(st.lists(alphabet, min_size=1, max_size=25))
    start = draw(st.integers(0, len(base) - 1))
    count = draw(st.integers(0, min(3, len(base) - start)))
    new = draw(st.lists(st.sampled_from(["N\n", "b\n", "a\n"]), max_size=3))
    ours = draw(st.lists(alphabet | st.sampled_from(["U\n", "V\n"]), max_size=25))
    return "".join(base), hunk(base, start, count, new), "".join(ours)


@settings(max_examples=500, deadline=None)
@given(anything())
def test_a_user_edit_is_never_overwritten(case: tuple[str, Hunk, str]) -> None:
    base, h, ours = case
    out = relocate(h, base, ours)
    if out is None:
        return
    mine, got, old, new = split_lines(ours), out, split_lines(h.old_text), h.new_text
    # The result is the user's text with one run of the hunk's old lines (unchanged lines
    # of the user's) replaced by the new text — every other line of the user's is kept.
    options = {
        "".join(mine[:p]) + new + "".join(mine[p + len(old) :])
        for p in range(len(mine) + 1)
        if mine[p : p + len(old)] == old
    }
    assert got in options


def test_an_edit_on_the_next_line_no_longer_blocks_the_hunk() -> None:
    base = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
    ours = "def a():\n    return 1\n# the user's note\n\ndef b():\n    return 2\n"
    lines = split_lines(base)
    h = hunk(lines, 1, 1, ["    return 10\n"])
    merged, done, conflicts = merge_hunks(base, ours, [h])
    assert (done, conflicts) == (["h1"], [])
    assert merged == "def a():\n    return 10\n# the user's note\n\ndef b():\n    return 2\n"


def test_a_hunk_whose_line_the_user_changed_still_conflicts() -> None:
    base = "one\ntwo\nthree\n"
    ours = "one\nTWO by the user\nthree\n"
    h = hunk(split_lines(base), 1, 1, ["two by the agent\n"])
    merged, done, conflicts = merge_hunks(base, ours, [h])
    assert done == [] and [c for c, _ in conflicts] == ["h1"] and merged == ours
