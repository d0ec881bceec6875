"""A hunk that conflicts with the user's edit, settled the ways the user may choose
(issue 17, "Merge that understands neighbours"): take theirs, and ask the agent to redo
the hunk against the current file (a turn with the current text).
"""

from __future__ import annotations

from pathlib import Path

from baton.core.diff import HunkState
from baton.core.lifecycle import TaskState
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor
from tests.conftest import fake_script, settle

S = TaskState
OLD = "def total(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s\n"
# The user renames the accumulator on the line the agent changes too.
MINE = "def total(xs):\n    acc = 0\n    for x in xs:\n        s += x\n    return s\n"


async def conflicting(sup: Supervisor, repo: Path, *later: dict[str, str]) -> tuple[str, str]:
    """A task in review whose one hunk changes line 2, with the user's edit of line 2 on
    disk: (task id, hunk id). ``later`` are the fake agent's steps for a second turn."""
    steps: list[dict[str, str]] = [
        {"edit": "calc.py", "old": "    s = 0\n", "new": "    s = 0  # the sum\n"},
        {"end_turn": "done"},
        *later,
    ]
    (repo / "calc.py").write_text(OLD)
    task = await sup.delegate(DelegateRequest(instruction=fake_script(*steps), root=str(repo)))
    assert await settle(sup, task.id, 30) == S.REVIEW
    files, _ = await sup.diff(task.id)
    (hunk,) = files[0].hunks
    (repo / "calc.py").write_text(MINE)
    result = await sup.accept(task.id, [hunk.id])
    assert [h for h, _ in result.conflicts] == [hunk.id] and not result.applied
    return task.id, hunk.id


async def test_take_theirs_replaces_the_users_lines_at_the_hunks_place(
    sup: Supervisor, repo: Path
) -> None:
    tid, hid = await conflicting(sup, repo)
    result = await sup.accept(tid, [hid], theirs=[hid])
    assert result.applied == [hid] and not result.conflicts
    want = "def total(xs):\n    s = 0  # the sum\n    for x in xs:\n        s += x\n    return s\n"
    assert (repo / "calc.py").read_text() == want
    assert (await sup.get(tid)).state == S.APPLIED


async def test_take_theirs_touches_only_the_hunks_place(sup: Supervisor, repo: Path) -> None:
    tid, hid = await conflicting(sup, repo)
    # Another edit of the user's, far from the hunk, stays.
    (repo / "calc.py").write_text(MINE.replace("return s", "return s  # done"))
    result = await sup.accept(tid, [hid], theirs=[hid])
    assert result.applied == [hid]
    text = (repo / "calc.py").read_text()
    assert "    s = 0  # the sum\n" in text and "acc" not in text
    assert text.endswith("    return s  # done\n")


async def test_asking_the_agent_to_redo_runs_a_turn_with_the_current_text_and_the_new_hunk_applies(
    sup: Supervisor, repo: Path
) -> None:
    # The second turn: the agent finds the user's line in its checkout and redoes its change.
    redo = {"edit": "calc.py", "old": "    acc = 0\n", "new": "    acc = 0  # the sum\n"}
    tid, hid = await conflicting(sup, repo, redo)
    task = await sup.redo(tid, hid)
    assert task.state == S.RUNNING
    assert await settle(sup, tid, 30) == S.REVIEW
    prompt = (await sup.get(tid)).options["turn"]["prompt"]
    assert "    2      acc = 0\n" in prompt  # the user's current text went to the agent
    files, _ = await sup.diff(tid)
    (hunk,) = files[0].hunks
    # the same change at the same place: it keeps its id, so the editors follow it
    assert hunk.id == hid and hunk.state == HunkState.PENDING
    # only the redo turn's result: a later turn's hunk there gets its own id (and decision)
    stored = await sup.store.call(lambda s: s.get_task(tid))
    assert "id" not in stored.options["redone"]["calc.py"]
    assert hunk.new_text == "    acc = 0  # the sum\n"
    result = await sup.accept(tid, [hunk.id])
    assert result.applied == [hunk.id] and not result.conflicts
    assert (repo / "calc.py").read_text() == MINE.replace("acc = 0", "acc = 0  # the sum")
    assert (await sup.get(tid)).state == S.APPLIED


async def test_a_redone_hunk_does_not_overwrite_a_line_the_user_changed_after_asking(
    sup: Supervisor, repo: Path
) -> None:
    redo = {"edit": "calc.py", "old": "    acc = 0\n", "new": "    acc = 0  # the sum\n"}
    tid, hid = await conflicting(sup, repo, redo)
    await sup.redo(tid, hid)
    assert await settle(sup, tid, 30) == S.REVIEW
    (repo / "calc.py").write_text(MINE.replace("acc = 0", "total = 0"))
    files, _ = await sup.diff(tid)
    (hunk,) = files[0].hunks
    result = await sup.accept(tid, [hunk.id])
    assert [h for h, _ in result.conflicts] == [hunk.id]
    assert "total = 0\n" in (repo / "calc.py").read_text()
