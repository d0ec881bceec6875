"""Which side of a hunk a text holds at its place (issue 17: undo after accept is a decision)."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from baton.core.diff import Hunk, apply_hunks, compute_hunks
from baton.core.held import Side, held


def _texts(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


BASE = _texts(["def a():", "    return 1", "", "", "def b():", "    return 2"])
RESULT = _texts(["def a():", "    return 10", "", "", "def b():", "    return 20", "    # x"])


def hunks() -> tuple[Hunk, ...]:
    return compute_hunks("app.py", BASE, RESULT)


def test_the_snapshot_holds_every_hunk_old_and_the_result_every_hunk_new() -> None:
    for h in hunks():
        assert held(h, BASE, RESULT, BASE) == Side.OLD
        assert held(h, BASE, RESULT, RESULT) == Side.NEW


def test_one_hunk_undone_of_two_accepted() -> None:
    first, second = hunks()
    only_second = apply_hunks(BASE, [second])
    assert held(first, BASE, RESULT, only_second) == Side.OLD
    assert held(second, BASE, RESULT, only_second) == Side.NEW


def test_edits_elsewhere_do_not_matter_and_edits_at_the_place_are_neither() -> None:
    first, _ = hunks()
    elsewhere = "import os\n" + RESULT.replace("def b():", "def b():  # mine")
    assert held(first, BASE, RESULT, elsewhere) == Side.NEW
    assert held(first, BASE, RESULT, "import os\n" + BASE) == Side.OLD
    typed = RESULT.replace("    return 10\n", "    return 11\n")
    assert held(first, BASE, RESULT, typed) is None
    inserted = RESULT.replace("    return 10\n", "    return 10\n    print()\n")
    assert held(first, BASE, RESULT, inserted) is None


def test_a_pure_insertion_and_a_pure_deletion() -> None:
    base = _texts(["a", "b", "c"])
    result = _texts(["a", "x", "b"])  # x inserted after a; c deleted
    insert, delete = compute_hunks("f", base, result)
    assert insert.old_count == 0 and delete.new_count == 0
    for text, want_insert, want_delete in (
        (base, Side.OLD, Side.OLD),
        (result, Side.NEW, Side.NEW),
        (apply_hunks(base, [insert]), Side.NEW, Side.OLD),
        (apply_hunks(base, [delete]), Side.OLD, Side.NEW),
    ):
        assert held(insert, base, result, text) == want_insert
        assert held(delete, base, result, text) == want_delete
    assert held(insert, base, result, _texts(["a", "y", "x", "b", "c"])) is None


def test_whole_file_hunks_have_no_place() -> None:
    h = Hunk("w", 0, 0, 1, 1, "", "new\n", whole_file=True)
    assert held(h, "", "new\n", "new\n") is None


@st.composite
def reviews(draw: st.DrawFn) -> tuple[str, str, list[int], str]:
    """A base, a result, a subset of its hunks applied (the user's accepts and undos)."""
    alphabet = st.sampled_from(["a", "b", "c", "", "}"]) if draw(st.booleans()) else None
    n = draw(st.integers(0, 12))
    if alphabet is None:  # unique lines: every answer is exact
        base_lines = [f"line {i}" for i in range(n)]
        result_lines = list(base_lines)
        fresh = iter(range(100))
        for _ in range(draw(st.integers(1, 4))):
            at = draw(st.integers(0, len(result_lines)))
            cut = draw(st.integers(0, min(2, len(result_lines) - at)))
            new = [f"new {next(fresh)}" for _ in range(draw(st.integers(0, 2)))]
            result_lines[at : at + cut] = new
    else:
        base_lines = draw(st.lists(alphabet, max_size=10))
        result_lines = draw(st.lists(alphabet, max_size=10))
    base, result = _texts(base_lines), _texts(result_lines)
    count = len(compute_hunks("f", base, result))
    chosen = draw(st.lists(st.integers(0, max(count - 1, 0)), unique=True, max_size=count))
    unique = "unique" if alphabet is None else "repeated"
    return base, result, [i for i in chosen if i < count], unique


@settings(max_examples=300, deadline=None)
@given(reviews())
# An insertion whose line repeats its neighbours: its empty old side "stood" between them
# while the inserted line was right there, and an applied hunk read as undone.
@example(("b\na\nb\na\nb\nc\n", "a\na\na\nb\nb\nc\na\nb\nb\n", [0, 3], "repeated"))
def test_held_is_never_wrong_and_exact_with_unique_lines(
    case: tuple[str, str, list[int], str],
) -> None:
    base, result, chosen, lines = case
    all_hunks = compute_hunks("f", base, result)
    applied = [all_hunks[i] for i in chosen]
    current = apply_hunks(base, applied)
    for h in all_hunks:
        want = Side.NEW if h in applied else Side.OLD
        got = held(h, base, result, current)
        if lines == "unique":
            assert got == want, (h, current)
        else:
            assert got in (want, None), (h, current)
