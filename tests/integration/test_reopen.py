"""Undo of an accepted hunk is a decision (issue 17, item 1).

An editor's undo takes an accepted hunk back out of the document; before, the hunk stayed
``accepted``, the task ended ``applied`` with none of its change in the file and nothing
could be accepted again. Now the client asks for a reopen (or, after a redo, a reaccept)
and the broker decides from what the user's text holds at the hunk's place.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from baton.core.diff import HunkState
from baton.core.lifecycle import TaskState
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor, TaskError
from tests.conftest import fake_script, git, settle

S = TaskState
OLD = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
NEW = "def a():\n    return 10\n\n\ndef b():\n    return 20\n"
FIRST_ONLY = "def a():\n    return 10\n\n\ndef b():\n    return 2\n"


async def two_hunks(sup: Supervisor, repo: Path) -> tuple[str, str, str]:
    """A task in review with two hunks in app.py: (task id, first hunk, second hunk)."""
    steps = [
        {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
        {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
    ]
    task = await sup.delegate(DelegateRequest(instruction=fake_script(*steps), root=str(repo)))
    assert await settle(sup, task.id) == S.REVIEW
    files, _ = await sup.diff(task.id)
    first, second = sorted(files[0].hunks, key=lambda h: h.old_start)
    return task.id, first.id, second.id


async def states(sup: Supervisor, task_id: str) -> list[HunkState]:
    files, _ = await sup.diff(task_id)
    return [h.state for h in sorted(files[0].hunks, key=lambda h: h.old_start)]


def snapshot_ref(repo: Path, task_id: str) -> str | None:
    proc = subprocess.run(
        ["git", "rev-parse", "--verify", "-q", f"refs/baton/snapshots/{task_id}"],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    return proc.stdout.strip() or None


async def test_undo_after_accept_all_reviews_the_task_again_and_redo_applies_it(
    sup: Supervisor, repo: Path
) -> None:
    tid, first, second = await two_hunks(sup, repo)
    result = await sup.accept(tid)
    assert sorted(result.applied) == sorted([first, second])
    assert (await sup.get(tid)).state == S.APPLIED
    assert snapshot_ref(repo, tid) is None  # the settled task's refs were removed
    # The editor's undo: the buffer holds the old text again (the file on disk does not).
    done = await sup.reopen(tid, [first, second], current={"app.py": OLD})
    assert sorted(done.decided) == sorted([first, second]) and not done.kept
    task = await sup.get(tid)
    assert task.state == S.REVIEW and "reopened 2 hunk(s)" in task.message
    assert await states(sup, tid) == [HunkState.PENDING, HunkState.PENDING]
    assert snapshot_ref(repo, tid) == task.options["snapshot"]["commit"]
    assert (repo / "app.py").read_text() == NEW, "a reopen must not write the user's file"
    # The redo: the buffer holds the new text again; nothing is written, all is accepted.
    (repo / "app.py").write_text(OLD)  # (the disk, saved meanwhile, is not what counts)
    done = await sup.reaccept(tid, [first, second], current={"app.py": NEW})
    assert sorted(done.decided) == sorted([first, second])
    assert (await sup.get(tid)).state == S.APPLIED
    assert await states(sup, tid) == [HunkState.ACCEPTED, HunkState.ACCEPTED]
    assert (repo / "app.py").read_text() == OLD
    assert snapshot_ref(repo, tid) is None  # settled again: cleaned up again


async def test_undo_of_one_of_two_accepted_hunks_then_accept_writes_it_again(
    sup: Supervisor, repo: Path
) -> None:
    tid, first, second = await two_hunks(sup, repo)
    await sup.accept(tid)
    (repo / "app.py").write_text(FIRST_ONLY)  # the user undid the second hunk, and saved
    done = await sup.reopen(tid, [first, second])  # no buffer: the file on disk counts
    assert done.decided == [second]
    assert done.kept == [(first, "your text still holds its new lines at its place")]
    assert (await sup.get(tid)).state == S.REVIEW
    assert await states(sup, tid) == [HunkState.ACCEPTED, HunkState.PENDING]
    result = await sup.accept(tid, [second])  # the reopened hunk can be accepted again
    assert result.applied == [second]
    assert (repo / "app.py").read_text() == NEW
    assert (await sup.get(tid)).state == S.APPLIED


async def test_a_partly_accepted_task_in_review_reopens_and_reaccepts_in_place(
    sup: Supervisor, repo: Path
) -> None:
    tid, first, second = await two_hunks(sup, repo)
    await sup.accept(tid, [first])
    assert (await sup.get(tid)).state == S.REVIEW
    done = await sup.reopen(tid, [first], current={"app.py": OLD})
    assert done.decided == [first]
    assert await states(sup, tid) == [HunkState.PENDING, HunkState.PENDING]
    done = await sup.reaccept(tid, [first], current={"app.py": FIRST_ONLY})
    assert done.decided == [first]
    assert await states(sup, tid) == [HunkState.ACCEPTED, HunkState.PENDING]
    await sup.reject(tid, [second])
    task = await sup.get(tid)
    assert task.state == S.APPLIED


async def test_what_the_text_does_not_hold_is_kept_and_nothing_changes(
    sup: Supervisor, repo: Path
) -> None:
    tid, first, second = await two_hunks(sup, repo)
    await sup.accept(tid)
    edited = NEW.replace("return 10", "return 11")  # the user typed over the hunk
    done = await sup.reopen(tid, [first, second], current={"app.py": edited})
    assert done.decided == []
    reasons = dict(done.kept)
    assert reasons[first] == "your text at its place is neither its old nor its new lines"
    assert reasons[second] == "your text still holds its new lines at its place"
    assert (await sup.get(tid)).state == S.APPLIED
    assert snapshot_ref(repo, tid) is None
    # a reaccept is only for review; a reopen only for accepted hunks
    with pytest.raises(TaskError, match="reaccept is for tasks in review"):
        await sup.reaccept(tid, [first], current={"app.py": NEW})
    first_undone = NEW.replace("return 10", "return 1")
    assert (await sup.reopen(tid, [first], current={"app.py": first_undone})).decided == [first]
    done = await sup.reopen(tid, [first], current={"app.py": first_undone})
    assert done.kept == [(first, "it is not accepted")]
    done = await sup.reaccept(tid, [first], current={"app.py": first_undone})
    assert done.kept == [(first, "your text does not hold its new lines at its place")]
    with pytest.raises(TaskError, match="unknown hunk"):
        await sup.reopen(tid, ["nope"])


async def test_a_task_reviewed_again_after_it_was_applied_refuses_a_reply(
    sup: Supervisor, repo: Path
) -> None:
    tid, first, _ = await two_hunks(sup, repo)
    await sup.accept(tid)
    await sup.reopen(tid, [first], current={"app.py": NEW.replace("return 10", "return 1")})
    assert (await sup.get(tid)).state == S.REVIEW
    with pytest.raises(TaskError, match="checkout was removed when it was applied"):
        await sup.reply(tid, "one more thing")
    assert (await sup.get(tid)).state == S.REVIEW


async def test_a_reopen_whose_snapshot_git_lost_is_refused(sup: Supervisor, repo: Path) -> None:
    tid, first, _ = await two_hunks(sup, repo)
    await sup.accept(tid)
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    with pytest.raises(TaskError, match="its snapshot is no longer in git"):
        await sup.reopen(tid, [first], current={"app.py": NEW.replace("return 10", "return 1")})
    assert (await sup.get(tid)).state == S.APPLIED


async def test_a_proposals_hunks_are_never_reopened(sup: Supervisor, repo: Path) -> None:
    """Baton writes nothing for an edit Claude Code proposes, so no undo takes one back: its
    accepted hunk's old text in the file is what is expected, not an undo."""
    task, _ = await sup.propose(
        repo / "app.py", OLD, NEW, root=repo, title="Claude Code: edit app.py", source="claude-code"
    )
    files, _ = await sup.diff(task.id)
    first = files[0].hunks[0].id
    await sup.accept(task.id, [first])
    done = await sup.reopen(task.id, [first], current={"app.py": OLD})
    assert done.decided == [] and "proposed: Baton wrote nothing for it" in done.kept[0][1]
    assert await states(sup, task.id) == [HunkState.ACCEPTED, HunkState.PENDING]
    assert (await sup.reaccept(task.id, [first])).decided == []
