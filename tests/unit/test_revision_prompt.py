"""The revision prompt, the interdiff and the protocol's comments (pure)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from baton.core.diff import FileDiff, FileStatus, HunkState, compute_hunks
from baton.core.revision import (
    Comment,
    comments_from_json,
    interdiff,
    nothing_to_review,
    over_accepted,
    proposed_lines,
    rejections_from_json,
    reviewed,
    revision_prompt,
)

OLD = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"


def files(new: str) -> list[FileDiff]:
    return [FileDiff("app.py", FileStatus.MODIFIED, compute_hunks("app.py", OLD, new))]


def test_the_prompt_quotes_each_comment_with_its_file_lines_and_the_proposed_lines() -> None:
    (f,) = files(OLD.replace("return 2", "return 20").replace("return 1", "return 10"))
    first, second = f.hunks
    prompt = revision_prompt(
        [Comment("app.py", 6, 6, "as a product", second.id), Comment("app.py", 3, 4, "why?")],
        [(first, "app.py", "keep it at one")],
        {h.id: ("app.py", h) for h in f.hunks},
        {1: "\n\n"},
    )
    lines = prompt.splitlines()
    assert "1. app.py:6: as a product" in lines
    at = lines.index("1. app.py:6: as a product")
    assert lines[at + 1 : at + 5] == [
        "  what you proposed there:",
        "        return 20",
        "  in place of:",
        "        return 2",
    ]
    assert "2. app.py:3-4: why?" in lines
    assert "- app.py:2: keep it at one" in lines
    assert "already accepted are in their files" in prompt


def test_a_deletion_is_quoted_as_removed_lines() -> None:
    (f,) = files(OLD.replace("    return 2\n", ""))
    (h,) = f.hunks
    assert proposed_lines(h) == (5, 5)
    prompt = revision_prompt([Comment("app.py", 6, 6, "keep it", h.id)], [], {h.id: ("app.py", h)})
    assert "    (nothing: the lines are removed)" in prompt


def test_the_interdiff_keeps_the_same_change_and_names_the_new_and_the_dropped() -> None:
    before = files(OLD.replace("return 2", "return 20").replace("return 1", "return 10"))
    after = files(OLD.replace("return 2", "return 2 * 10").replace("return 1", "return 10"))
    decided = reviewed(before)
    assert set(decided.values()) == {str(HunkState.PENDING)}
    d = interdiff(2, decided, after)
    same = before[0].hunks[0].id
    assert after[0].hunks[0].id == same  # the unchanged hunk has the same id
    assert d.kept == (same,)
    assert d.new == (after[0].hunks[1].id,)
    assert d.dropped == (before[0].hunks[1].id,)
    assert d.to_json()["turn"] == 2


def test_comments_and_rejections_from_the_protocol() -> None:
    raw = [{"path": "app.py", "start": 2, "text": "hm", "hunkId": "abc"}]
    assert comments_from_json(raw) == [Comment("app.py", 2, 2, "hm", "abc")]
    assert comments_from_json(None) == []
    assert rejections_from_json([{"hunkId": "abc", "reason": "no"}]) == {"abc": "no"}
    for bad, word in (
        ({"path": "a"}, "comments: a list"),
        ([{"text": "x"}], "path"),
        ([{"path": "a", "text": " "}], "text"),
        ([{"path": "a", "text": "x", "start": True}], "start/end"),
        ([{"path": "a", "text": "x", "hunkId": 3}], "hunkId"),
    ):
        with pytest.raises(ValueError, match=word):
            comments_from_json(bad)
    with pytest.raises(ValueError, match="hunkId, reason"):
        rejections_from_json([{"reason": "no"}])


def test_a_revision_that_brings_nothing_to_decide_is_said_and_one_with_new_hunks_is_not() -> None:
    first = files("def a():\n    return 10\n\n\ndef b():\n    return 2\n")
    before = reviewed(first)
    same = interdiff(2, before, first)
    assert nothing_to_review(same, first) == "the revision (turn 2) changed nothing"
    decided = [replace(f, hunks=tuple(replace(h, state=HunkState.ACCEPTED) for h in f.hunks))
               for f in first]  # fmt: skip
    assert nothing_to_review(interdiff(2, before, decided), decided) == (
        "the revision (turn 2) changed nothing; no hunks left to review"
    )
    assert "left no hunks:" in (nothing_to_review(interdiff(2, before, []), []) or "")
    other = files("def a():\n    return 100\n\n\ndef b():\n    return 2\n")
    assert nothing_to_review(interdiff(2, before, other), other) is None


def test_a_hunk_over_accepted_lines_is_a_change_of_them_only_when_it_takes_them_in_whole() -> None:
    (accepted,) = files("def a():\n    return 10\n\n\ndef b():\n    return 2\n")[0].hunks
    (rewrite,) = files("def a():\n    return 100\n\n\ndef b():\n    return 2\n")[0].hunks
    assert over_accepted([rewrite], [accepted], OLD) == {rewrite.id: "    return 10\n"}
    # far from it: not a rewrite of it
    (elsewhere,) = files("def a():\n    return 1\n\n\ndef b():\n    return 20\n")[0].hunks
    assert over_accepted([elsewhere], [accepted], OLD) == {}
    # a hunk that covers only part of what was accepted (the agent took back one of its
    # lines) is left a conflict: replacing the accepted lines would guess at the rest
    two = compute_hunks("app.py", OLD, OLD.replace("    return 1\n\n", "    return 10\n#\n"))
    part = compute_hunks("app.py", OLD, OLD.replace("    return 1\n", "    return 100\n"))
    assert len(two) == 1 and len(part) == 1
    assert over_accepted(part, list(two), OLD) == {}
    whole = compute_hunks("app.py", OLD, OLD.replace("    return 1\n\n", "    return 100\n#\n"))
    assert over_accepted(whole, list(two), OLD) == {whole[0].id: "    return 10\n#\n"}
    # decided hunks are not pending changes
    assert over_accepted([replace(rewrite, state=HunkState.REJECTED)], [accepted], OLD) == {}
