from hypothesis import given
from hypothesis import strategies as st

from baton.core.diff import FileDiff, FileStatus, apply_hunks, compute_hunks, find_hunk

OLD = "a\nb\nc\nd\ne\nf\n"


def test_hunks_are_zero_context_blocks() -> None:
    new = "a\nB\nc\nd\ne\nf\ng\n"
    hunks = compute_hunks("x.txt", OLD, new)
    assert [(h.old_start, h.old_count, h.new_start, h.new_count) for h in hunks] == [
        (2, 1, 2, 1),
        (6, 0, 7, 1),
    ]
    assert hunks[0].old_text == "b\n" and hunks[0].new_text == "B\n"


def test_partial_apply_keeps_rejected_hunks_out() -> None:
    new = "A\nb\nc\nd\nE\nf\n"
    first, second = compute_hunks("x", OLD, new)
    assert apply_hunks(OLD, [first]) == "A\nb\nc\nd\ne\nf\n"
    assert apply_hunks(OLD, [second]) == "a\nb\nc\nd\nE\nf\n"
    assert apply_hunks(OLD, [first, second]) == new


def test_ids_are_stable_and_distinct() -> None:
    new = "x\nb\nx\nd\ne\nf\n"
    once = compute_hunks("p", "a\nb\na\nd\ne\nf\n", new)
    again = compute_hunks("p", "a\nb\na\nd\ne\nf\n", new)
    assert [h.id for h in once] == [h.id for h in again]
    assert len({h.id for h in once}) == len(once) == 2  # identical changes, distinct ids
    assert compute_hunks("other", "a\n", "b\n")[0].id != compute_hunks("p", "a\n", "b\n")[0].id


def test_crlf_and_missing_final_newline_survive() -> None:
    old = "one\r\ntwo\r\nthree"
    new = "one\r\nTWO\r\nthree"
    (h,) = compute_hunks("w", old, new)
    assert h.new_text == "TWO\r\n"
    assert apply_hunks(old, [h]) == new


def test_find_hunk_by_prefix() -> None:
    hunks = compute_hunks("p", OLD, "Z\n" + OLD)
    files = [FileDiff("p", FileStatus.MODIFIED, hunks)]
    found = find_hunk(files, hunks[0].id[:6])
    assert found is not None and found[1] == hunks[0]
    assert find_hunk(files, "nope") is None


lines = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\r\n", "e"]), max_size=12)


@given(lines, lines)
def test_applying_all_hunks_reproduces_the_new_text(a: list[str], b: list[str]) -> None:
    old, new = "".join(a), "".join(b)
    assert apply_hunks(old, compute_hunks("f", old, new)) == new
    assert apply_hunks(old, []) == old
