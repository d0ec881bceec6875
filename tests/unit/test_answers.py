"""The short answers: what they keep, what they leave out, how they cut and page."""

from __future__ import annotations

import re

from baton.core.diff import FileDiff, FileStatus, Hunk, HunkState
from baton.core.events import Event, EventType
from baton.core.lifecycle import Completion, TaskState
from baton.core.task import Task
from baton.surfaces.ws import answers


def task(**fields: object) -> Task:
    return Task(id="8rgabcdefgh", instruction="x", root="/r", **fields)  # type: ignore[arg-type]


def hunk(n: int, state: HunkState = HunkState.PENDING, lines: int = 1) -> Hunk:
    old = "".join(f"old {n}.{i}\n" for i in range(lines))
    new = "".join(f"new {n}.{i}\n" for i in range(lines))
    return Hunk(f"h{n}", n * 10, lines, n * 10, lines, old, new, state)


def test_lean_drops_only_what_says_nothing() -> None:
    kept = answers.lean({"a": None, "b": "", "c": [], "d": {}, "e": 0, "f": False, "g": "x"})
    assert kept == {"e": 0, "f": False, "g": "x"}


def test_cut_keeps_short_text_and_marks_the_rest_of_long_text() -> None:
    assert answers.cut("short", 10, "more") == "short"
    text = "word " * 100
    got = answers.cut(text, 50, "inspect detail=summary")
    head, count = re.fullmatch(r"(.*) … \(\+(\d+) chars: inspect detail=summary\)", got).groups()  # type: ignore[union-attr]
    assert len(head) <= 50 and head.endswith("word") and text.startswith(head)
    assert len(head) + int(count) == len(text)


def test_first_line_marks_the_lines_after_it() -> None:
    assert answers.first_line("", 80, "x") == ""
    assert answers.first_line("  one line  \n", 80, "x") == "one line"
    got = answers.first_line("Did it.\n\nDetails follow.", 80, "inspect detail=summary")
    assert got == "Did it. … (+17 chars: inspect detail=summary)"


def test_a_line_leaves_out_what_the_state_says() -> None:
    review = task(
        state=TaskState.REVIEW, completion=Completion.COMPLETED, message="ready for review"
    )
    assert answers.line(review) == {
        "id": "8rgabcdefgh",
        "state": "review",
        "next": ["diff", "accept", "reject", "reply"],
    }
    failed = task(state=TaskState.FAILED, completion=Completion.AUTH, message="not logged in")
    assert answers.line(failed, worker=True) == {
        "id": "8rgabcdefgh",
        "state": "failed",
        "worker": "fake",
        "completion": "auth",
        "message": "not logged in",
        "next": ["inspect", "retry"],
    }
    long = answers.line(task(state=TaskState.NEEDS_INPUT, message="why? " * 200))
    assert len(long["message"]) < 400 and long["message"].endswith("chars: inspect detail=task)")


def test_woke_by_a_rate_limit_says_when_the_task_runs_again() -> None:
    running = task(state=TaskState.QUEUED, summary="")
    event = Event(
        EventType.STATE,
        {"from": "running", "to": "rate_limited", "reason": "429 slow down", "resets_at": 142.0},
        task_id=running.id,
    )
    assert answers.woke_by(event)
    assert not answers.woke_by(Event(EventType.STATE, {"to": "queued"}))
    assert not answers.woke_by(Event(EventType.TEXT, {"to": "review"}))
    assert answers.woke(running, event, now=100.0) == {
        "id": "8rgabcdefgh",
        "state": "rate_limited",
        "completion": "rate_limit",
        "message": "429 slow down",
        "retryIn": 42,
        "next": ["watch", "cancel"],
    }
    settled = task(state=TaskState.ANSWERED, completion=Completion.COMPLETED, summary="42\n")
    assert list(answers.woke(settled)) == ["id", "state", "summary", "next"]


def test_diff_counts() -> None:
    one = [FileDiff("src/app.py", FileStatus.MODIFIED, (hunk(1), hunk(2, lines=3)))]
    assert answers.diff_counts(one, True) == "src/app.py +4 -4, 2 hunks pending"
    assert answers.diff_counts(one, False) == "draft: src/app.py +4 -4, 2 hunks pending"
    two = [*one, FileDiff("b.txt", FileStatus.ADDED, (hunk(3, HunkState.ACCEPTED),))]
    assert answers.diff_counts(two, True) == "2 files +5 -5, 2 of 3 hunks pending"
    assert answers.diff_counts([], True) == ""


def test_short_inspect_holds_counts_not_sections() -> None:
    t = task(state=TaskState.REVIEW, completion=Completion.COMPLETED, summary="Done.\nMore.")
    files = [FileDiff("a.py", FileStatus.MODIFIED, (hunk(1),))]
    asking = [{"id": "p1", "tool": "rm -rf build", "preview": "x" * 1000, "options": []}]
    short = answers.short(t, [], files, True, asking)
    assert short["attempts"] == 0 and short["diff"] == "a.py +1 -1, 1 hunk pending"
    assert short["summary"].startswith("Done. … (+")
    assert short["permissions"][0]["id"] == "p1" and len(short["permissions"][0]["preview"]) < 400
    assert "options" not in short["permissions"][0]


def test_diff_text_pages_reassemble_the_whole_text() -> None:
    t = task(state=TaskState.REVIEW)
    files = [FileDiff("big.txt", FileStatus.ADDED, tuple(hunk(i, lines=40) for i in range(30)))]
    whole = answers.diff_text(t, files, True, limit=10**9)
    assert "cut at" not in whole and whole.endswith("next: diff, accept, reject, reply")
    pages, offset = [], 0
    while True:
        page = answers.diff_text(t, files, True, offset, limit=5000)
        marker = re.search(r"\n… \(cut at (\d+) of (\d+) chars: diff id=\w+ offset=(\d+)\)$", page)
        if marker is None:
            pages.append(page)
            break
        assert int(marker.group(2)) == len(whole) and len(page) <= 5100
        pages.append(page[: marker.start()] + "\n")
        offset = int(marker.group(3))
    assert len(pages) > 5 and "".join(pages) == whole
