"""The language server's own view of an undo in ``didChange`` (pure parts of lsp.undone)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from baton.core.diff import FileDiff, FileStatus, HunkState, compute_hunks
from baton.core.lifecycle import TaskState
from baton.core.task import Task
from baton.runtime.reopen import Redecided
from baton.surfaces.lsp import undone
from baton.surfaces.lsp.placement import TaskDiff

OLD = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
NEW = "def a():\n    return 10\n\n\ndef b():\n    return 20\n"


def diff(tid: str, state: TaskState, *hunk_states: HunkState) -> TaskDiff:
    hunks = compute_hunks("app.py", OLD, NEW)
    hunks = tuple(replace(h, state=s) for h, s in zip(hunks, hunk_states, strict=True))
    task = Task(id=tid, instruction="x", root="/r", state=state)
    files = [FileDiff("app.py", FileStatus.MODIFIED, hunks)]
    return TaskDiff(task, Path("/r"), files, True, {"app.py": OLD})


class _Server:
    supervisor: Any = None

    def open_document(self, uri: str) -> tuple[str, int | None] | None:
        return None

    def spawn(self, coro: Any, name: str) -> Any:
        raise AssertionError


def test_an_accepted_hunk_whose_old_lines_are_back_is_undone_and_a_redo_is_seen() -> None:
    td = diff("t", TaskState.REVIEW, HunkState.ACCEPTED, HunkState.PENDING)
    first, second = (h.id for h in td.files[0].hunks)
    undo = OLD.replace("    return 2\n", "    return 20\n")  # the first accept undone
    assert undone._sides(td, td.files, {"app.py": undo}, set()) == ([first], [])
    assert undone._sides(td, td.files, {"app.py": NEW}, set()) == ([], [])  # nothing undone
    reopened = diff("t", TaskState.REVIEW, HunkState.PENDING, HunkState.PENDING)
    # a redo accepts again only the hunks reopened from the text
    assert undone._sides(reopened, reopened.files, {"app.py": NEW}, {first}) == ([], [first])
    assert second not in undone._sides(reopened, reopened.files, {"app.py": NEW}, {first})[1]


def test_a_clients_late_report_counts_as_done_and_only_for_what_was_decided_here() -> None:
    u = undone.Undone(_Server(), lambda task_id: None)
    u.note("t", "reopened", ["h1"])
    late = Redecided(kept=[("h1", "it is not accepted"), ("h2", "it is not accepted")])
    done = u.also_done("t", "reopened", late)
    assert done.decided == ["h1"] and done.kept == [("h2", "it is not accepted")]
    # a hunk kept for what the text holds is not made done
    held = Redecided(kept=[("h1", "your text still holds its new lines at its place")])
    assert u.also_done("t", "reopened", held).decided == []
    u.note("t", "reaccepted", ["h1"])  # a redo: no longer counted as reopened
    assert u.also_done("t", "reopened", late).decided == []


def test_only_decided_tasks_with_accepted_hunks_are_followed_and_at_most_so_many() -> None:
    u = undone.Undone(_Server(), lambda task_id: None)
    u.watch(diff("draft", TaskState.RUNNING, HunkState.ACCEPTED, HunkState.PENDING))
    u.watch(diff("open", TaskState.REVIEW, HunkState.PENDING, HunkState.PENDING))
    assert u.tasks == {}
    for n in range(undone.MAX_FOLLOWED + 5):
        u.watch(diff(f"t{n}", TaskState.APPLIED, HunkState.ACCEPTED, HunkState.ACCEPTED))
    assert len(u.tasks) == undone.MAX_FOLLOWED and "t0" not in u.tasks and "t68" in u.tasks
    u.watch(diff("t68", TaskState.REJECTED, HunkState.REJECTED, HunkState.REJECTED))
    assert "t68" not in u.tasks
