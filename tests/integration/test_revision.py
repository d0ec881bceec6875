"""Talk back from the diff: a comment on a hunk becomes a revision turn of the same session,
and its result is an interdiff whose unchanged hunks keep their decisions."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.core.diff import HunkState
from baton.core.events import EventType
from baton.core.lifecycle import TaskState
from baton.core.revision import Comment
from baton.runtime.requests import DelegateRequest
from baton.runtime.revision import since_last_review
from baton.runtime.supervisor import Supervisor, TaskError
from tests.conftest import fake_script, git, settle

TWO_TURNS = fake_script(
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
    {"edit": "notes.txt", "old": "three\n", "new": "THREE\n"},
    {"end_turn": "first result"},
    {"edit": "app.py", "old": "    return 20\n", "new": "    return 2 * 10\n"},
)


async def _in_review(sup: Supervisor, repo: Path) -> tuple[str, dict[str, str]]:
    task = await sup.delegate(DelegateRequest(instruction=TWO_TURNS, root=str(repo)))
    assert await settle(sup, task.id) == TaskState.REVIEW
    files, _ = await sup.diff(task.id)
    return task.id, {h.new_text: h.id for f in files for h in f.hunks}


async def test_a_comment_on_a_hunk_is_a_revision_turn_shown_as_an_interdiff(
    sup: Supervisor, repo: Path
) -> None:
    tid, ids = await _in_review(sup, repo)
    first = ids["    return 10\n"]
    commented = ids["    return 20\n"]
    notes = ids["THREE\n"]
    await sup.accept(tid, [first])  # decided before the revision: it stays accepted
    assert (repo / "app.py").read_text().startswith("def a():\n    return 10\n")
    await sup.revise(
        tid,
        [Comment("app.py", 6, 6, "spell it as a product, please", commented)],
        {notes: "keep the notes lower case"},
    )
    assert await settle(sup, tid) == TaskState.REVIEW

    attempts = await sup.attempts(tid)
    assert [a.reason for a in attempts] == ["first", "reply"]
    assert attempts[1].session_id == attempts[0].session_id  # the same session, resumed
    task = await sup.get(tid)
    prompt = task.options["turn"]["prompt"]
    assert "app.py:6: spell it as a product, please" in prompt
    assert "    return 20" in prompt  # the proposed lines it is about, quoted
    assert "notes.txt:3: keep the notes lower case" in prompt
    assert "THREE" in prompt

    files, final = await sup.diff(tid)
    assert final
    states = {h.new_text: h.state for f in files for h in f.hunks}
    assert states == {
        "    return 10\n": HunkState.ACCEPTED,  # unchanged: still accepted, still applied
        "    return 2 * 10\n": HunkState.PENDING,  # the revised hunk, new since the review
        "THREE\n": HunkState.REJECTED,  # rejected with a reason: stays rejected
    }
    since = since_last_review(task, files)
    assert since is not None and since.turn == 2
    stored = await sup.store.call(lambda s: s.get_task(tid))  # what another broker reads
    assert stored.options["revision"]["before"] == {
        first: "accepted",
        commented: "pending",
        notes: "rejected",
    }
    revised = next(h.id for f in files for h in f.hunks if h.new_text == "    return 2 * 10\n")
    assert since.new == (revised,)
    assert set(since.kept) == {first, notes}
    assert since.dropped == (commented,)
    # The revised hunk still applies on top of the one accepted before.
    await sup.accept(tid, [revised])
    assert (repo / "app.py").read_text() == (
        "def a():\n    return 10\n\n\ndef b():\n    return 2 * 10\n"
    )
    assert (repo / "notes.txt").read_text() == "one\ntwo\nthree\nfour\nfive\n"
    assert (await sup.get(tid)).state == TaskState.APPLIED


async def test_a_revision_needs_something_to_say_and_a_task_in_review(
    sup: Supervisor, repo: Path
) -> None:
    tid, ids = await _in_review(sup, repo)
    with pytest.raises(TaskError, match="needs a comment"):
        await sup.revise(tid, [])
    with pytest.raises(TaskError, match="unknown hunk"):
        await sup.revise(tid, [Comment("app.py", 1, 1, "why?", "ffffffffff")])
    with pytest.raises(TaskError, match="empty comment"):
        await sup.revise(tid, [Comment("app.py", 1, 1, "  ")])
    await sup.accept(tid, [ids["    return 10\n"]])
    with pytest.raises(TaskError, match="is accepted"):
        await sup.revise(tid, [], {ids["    return 10\n"]: "no"})
    await sup.reject(tid)
    with pytest.raises(TaskError, match="comments are for tasks in review"):
        await sup.revise(tid, [Comment("app.py", 1, 1, "too late")])


async def test_a_comment_on_lines_outside_any_hunk_quotes_the_users_lines(
    sup: Supervisor, repo: Path
) -> None:
    tid, _ = await _in_review(sup, repo)
    await sup.revise(tid, [Comment("notes.txt", 4, 5, "number these too")])
    assert await settle(sup, tid) == TaskState.REVIEW
    prompt = (await sup.get(tid)).options["turn"]["prompt"]
    assert "notes.txt:4-5: number these too" in prompt
    assert "    four\n    five" in prompt


async def test_each_turn_is_a_checkpoint_the_review_can_step_back_to(
    sup: Supervisor, repo: Path
) -> None:
    tid, ids = await _in_review(sup, repo)
    await sup.revise(tid, [Comment("app.py", 6, 6, "a product", ids["    return 20\n"])])
    assert await settle(sup, tid) == TaskState.REVIEW
    assert [(c["turn"], c["shown"]) for c in await sup.checkpoints(tid)] == [(1, False), (2, True)]
    with pytest.raises(TaskError, match="no other turn 2"):
        await sup.step_back(tid, 2)

    await sup.step_back(tid, 1)  # the first result is the diff again, files and all
    files, final = await sup.diff(tid)
    assert final and sorted(h.new_text for f in files for h in f.hunks) == sorted(ids)
    task = await sup.get(tid)
    assert (Path(task.worktree or "") / "app.py").read_text().endswith("    return 20\n")
    since = since_last_review(task, files)
    assert since is not None and since.turn == 1 and since.dropped != ()
    assert [(c["turn"], c["shown"]) for c in await sup.checkpoints(tid)] == [(1, True), (2, False)]

    await sup.step_back(tid, 2)  # and forward again
    files, _ = await sup.diff(tid)
    assert "    return 2 * 10\n" in [h.new_text for f in files for h in f.hunks]

    await sup.accept(tid)  # settled: the kept turns go with the task's other refs
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/baton/")
    assert refs == "", refs


async def test_stepping_back_keeps_a_hunk_accepted_since_or_refuses(
    sup: Supervisor, repo: Path
) -> None:
    tid, ids = await _in_review(sup, repo)
    await sup.revise(tid, [Comment("app.py", 6, 6, "a product", ids["    return 20\n"])])
    assert await settle(sup, tid) == TaskState.REVIEW
    files, _ = await sup.diff(tid)
    revised = next(h.id for f in files for h in f.hunks if h.new_text == "    return 2 * 10\n")
    await sup.accept(tid, [revised])
    with pytest.raises(TaskError, match="undo them first"):
        await sup.step_back(tid, 1)
    files, _ = await sup.diff(tid)  # nothing changed: the revised result is still shown
    assert {h.id: h.state for f in files for h in f.hunks}[revised] == HunkState.ACCEPTED


async def _told(sup: Supervisor, tid: str) -> list[str]:
    return [
        e.data["message"]
        for e in await sup.events(tid)
        if e.type == EventType.LOG and "revision" in e.data
    ]


async def test_a_revision_that_changes_nothing_says_so(sup: Supervisor, repo: Path) -> None:
    script = fake_script(
        {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
        {"end_turn": "first result"},
        {"say": "It is fine as it is; I changed nothing."},
    )
    task = await sup.delegate(DelegateRequest(instruction=script, root=str(repo)))
    assert await settle(sup, task.id) == TaskState.REVIEW
    files, _ = await sup.diff(task.id)
    hid = files[0].hunks[0].id
    await sup.revise(task.id, [Comment("app.py", 2, 2, "is 10 right?", hid)])
    assert await settle(sup, task.id) == TaskState.REVIEW
    assert await _told(sup, task.id) == ["the revision (turn 2) changed nothing"]
    stored = await sup.store.call(lambda s: s.get_task(task.id))
    assert stored.options["revision"]["told"] == "the revision (turn 2) changed nothing"
    # said once: another reply in review is not the revision's result again
    await sup.reply(task.id, "thanks")
    assert await settle(sup, task.id) in (TaskState.REVIEW, TaskState.ANSWERED)
    assert len(await _told(sup, task.id)) == 1


async def test_a_revision_that_reverts_its_change_says_no_hunks_are_left(
    sup: Supervisor, repo: Path
) -> None:
    script = fake_script(
        {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
        {"end_turn": "first result"},
        {"edit": "app.py", "old": "    return 10\n", "new": "    return 1\n"},
    )
    task = await sup.delegate(DelegateRequest(instruction=script, root=str(repo)))
    assert await settle(sup, task.id) == TaskState.REVIEW
    files, _ = await sup.diff(task.id)
    hid = files[0].hunks[0].id
    await sup.revise(task.id, [Comment("app.py", 2, 2, "leave it as it was", hid)])
    assert await settle(sup, task.id) == TaskState.ANSWERED  # no change any more
    assert await _told(sup, task.id) == [
        "the revision (turn 2) left no hunks: the agent's result has no change any more"
    ]


async def test_a_revision_with_new_hunks_to_review_says_nothing_more(
    sup: Supervisor, repo: Path
) -> None:
    tid, ids = await _in_review(sup, repo)
    await sup.revise(tid, [Comment("app.py", 6, 6, "as a product", ids["    return 20\n"])])
    assert await settle(sup, tid) == TaskState.REVIEW
    assert await _told(sup, tid) == []
    assert (await sup.get(tid)).options["revision"]["told"] == ""


REWRITE_ACCEPTED = fake_script(
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
    {"end_turn": "first result"},
    {"edit": "app.py", "old": "    return 10\n", "new": "    return 100\n"},
)


async def _accepted_then_rewritten(sup: Supervisor, repo: Path) -> tuple[str, str]:
    """A task whose accepted hunk the agent rewrites in a revision: (task id, new hunk)."""
    task = await sup.delegate(DelegateRequest(instruction=REWRITE_ACCEPTED, root=str(repo)))
    assert await settle(sup, task.id) == TaskState.REVIEW
    files, _ = await sup.diff(task.id)
    first = next(h.id for f in files for h in f.hunks if h.new_text == "    return 10\n")
    await sup.accept(task.id, [first])
    await sup.revise(task.id, [Comment("app.py", 2, 2, "make it a hundred", first)])
    assert await settle(sup, task.id) == TaskState.REVIEW
    files, _ = await sup.diff(task.id)
    (rewritten,) = [h for f in files for h in f.hunks if h.new_text == "    return 100\n"]
    assert rewritten.state == HunkState.PENDING
    return task.id, rewritten.id


async def test_a_rewrite_of_an_accepted_hunk_applies_over_the_accepted_lines(
    sup: Supervisor, repo: Path
) -> None:
    tid, hid = await _accepted_then_rewritten(sup, repo)
    result = await sup.accept(tid, [hid])
    assert result.applied == [hid] and not result.conflicts  # a change of them, no conflict
    assert (repo / "app.py").read_text().startswith("def a():\n    return 100\n")


async def test_a_rewrite_of_an_accepted_hunk_never_overwrites_a_later_user_edit(
    sup: Supervisor, repo: Path
) -> None:
    tid, hid = await _accepted_then_rewritten(sup, repo)
    text = (repo / "app.py").read_text()
    (repo / "app.py").write_text(text.replace("    return 10\n", "    return 11\n"))
    result = await sup.accept(tid, [hid])
    assert [h for h, _ in result.conflicts] == [hid] and not result.applied
    assert "    return 11\n" in (repo / "app.py").read_text()
