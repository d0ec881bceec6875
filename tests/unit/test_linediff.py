"""The line diff: hunks that always apply back, and time that follows the change (issue 18)."""

from __future__ import annotations

import difflib
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from baton.core.diff import apply_hunks, compute_hunks, split_lines
from baton.core.linediff import opcodes

#: Few distinct lines (blank, braces, CRLF, no final newline, odd bytes) to make the diff hard.
LINES = st.sampled_from(["\n", "}\n", "{\n", "a\n", "a\r\n", "b", "\x00\xff\n", "é\n"])
TEXTS = st.lists(LINES, max_size=40).map("".join)


@settings(max_examples=600, deadline=None)
@given(TEXTS, TEXTS)
def test_hunks_apply_back_to_the_old_text_to_give_the_new(old: str, new: str) -> None:
    hunks = compute_hunks("f", old, new)
    assert apply_hunks(old, hunks) == new
    assert len({h.id for h in hunks}) == len(hunks)


@settings(max_examples=600, deadline=None)
@given(st.lists(LINES, max_size=40), st.lists(LINES, max_size=40))
def test_opcodes_cover_both_sides_and_are_minimal(a: list[str], b: list[str]) -> None:
    ops = opcodes(a, b)
    i = j = 0
    for tag, i1, i2, j1, j2 in ops:
        assert (i1, j1) == (i, j) and tag in ("equal", "replace", "delete", "insert")
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
        i, j = i2, j2
    assert (i, j) == (len(a), len(b))
    kept = sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag == "equal")
    longest = sum(
        n for _, _, n in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_matching_blocks()
    )
    assert kept >= longest  # Myers keeps a longest common subsequence


def test_three_edits_in_a_20000_line_file_of_blank_and_brace_lines_take_milliseconds() -> None:
    old = "".join("}\n" if i % 3 == 0 else "\n" for i in range(20_000))
    lines = split_lines(old)
    lines[5_000] = "x = 1\n"
    lines.insert(12_000, "y = 2\n")
    del lines[18_000]
    new = "".join(lines)
    t0 = time.perf_counter()
    hunks = compute_hunks("big.txt", old, new)
    took = time.perf_counter() - t0
    assert len(hunks) == 3 and apply_hunks(old, hunks) == new
    assert took < 3.0, f"{took:.2f} s (SequenceMatcher took about 16 s)"


def test_a_change_too_large_to_diff_line_by_line_is_one_exact_replacement() -> None:
    old = "".join(f"old {i}\n" for i in range(3_000))
    new = "".join(f"new {i}\n" for i in range(3_000))
    t0 = time.perf_counter()
    hunks = compute_hunks("f", "head\n" + old + "tail\n", "head\n" + new + "tail\n")
    assert time.perf_counter() - t0 < 3.0
    assert len(hunks) == 1 and hunks[0].old_start == 2 and hunks[0].new_count == 3_000
