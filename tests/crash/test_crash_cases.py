"""Issue 14's crash cases 1, 2, 3 and 8: each kills the broker where the bug was seen."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.core.lifecycle import TaskState
from tests.crash.harness import Lab
from tests.crash.invariants import Work, check_accepted, check_task, states_visited

pytestmark = pytest.mark.crash

S = TaskState


async def test_case1_a_user_edit_made_while_no_broker_ran_is_not_reverted(lab: Lab) -> None:
    """Killed once the worktree exists; the user edits two tracked files; the next broker's
    diff has only the agent's hunk, and accept keeps the user's edits."""
    work = Work.of(
        lab.repo,
        [
            {"say": "changing a"},
            {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
            {"sleep": 0.3},
            {"say": "a changed"},
        ],
        "a returns 10",
    )
    request = work.request(lab.repo)
    lab.broker(crash_at="after_worktree", delegate=[request]).wait_killed()
    users_app = lab.edit_repo("app.py", "    return 2\n", "    return 2  # the user's\n")
    lab.edit_repo("notes.txt", "three\n", "three, said the user\n")
    # The broker may go on from the old snapshot, or take both snapshot and worktree anew.
    fresh = Work.of(lab.repo, work.steps, work.summary)
    sup = await lab.restart()
    tid = await lab.the_task(sup, request)
    await lab.settle_in(sup, [tid])
    await check_task(sup, lab, tid, work, alternatives=[fresh])
    files, _ = await sup.diff(tid)
    assert [(h.old_text, h.new_text) for f in files for h in f.hunks] == [
        ("    return 1\n", "    return 10\n")
    ]
    result = await sup.accept(tid)
    assert not result.conflicts, result.conflicts
    both = users_app.replace("    return 1\n", "    return 10\n", 1)
    await check_accepted(sup, lab, tid, work, disk={"app.py": both})


async def test_case2_killed_between_spawn_and_attempt_row_one_agent_runs(lab: Lab) -> None:
    """The agent still runs when the next broker comes: it is adopted, never started twice."""
    work = Work.of(
        lab.repo,
        [
            {"say": "started"},
            {"sleep": 2.0},
            {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
            {"stream": 5, "rate": 20, "size": 40},
            {"say": "ended"},
        ],
        "one agent did it",
    )
    request = work.request(lab.repo)
    lab.broker(crash_at="after_spawn", delegate=[request]).wait_killed()
    sup = await lab.restart()
    tid = await lab.the_task(sup, request)
    await lab.settle_in(sup, [tid])
    await check_task(sup, lab, tid, work, processes=1)
    attempts = await sup.attempts(tid)
    assert len(attempts) == 1, [(a.n, a.pid, a.reason, a.completion) for a in attempts]
    out = Path(attempts[0].out_path)
    assert b"\0" not in out.read_bytes(), "the agent's output file has NUL bytes (two writers)"


async def test_case3_killed_right_after_reading_the_exit_record_keeps_the_outcome(
    lab: Lab,
) -> None:
    """Five times: the broker dies having read the exit record; the next one settles the
    task exactly as the agent ended it (review, completed), never interrupted or failed."""
    for n in range(5):
        work = Work.of(
            lab.repo,
            [
                {"say": f"round {n}"},
                {"write": f"round-{n}.txt", "content": f"round {n}\n"},
                {"stream": 3, "rate": 30, "size": 40},
            ],
            f"round {n} done",
        )
        request = work.request(lab.repo)
        lab.broker(crash_at="after_exit", delegate=[request]).wait_killed()
        sup = await lab.restart()
        tid = await lab.the_task(sup, request)
        await lab.settle_in(sup, [tid])
        visited = states_visited(await sup.events(tid))
        assert not {"failed", "interrupted"} & set(visited), f"round {n}: went {visited}"
        await check_task(sup, lab, tid, work)
        await sup.close()
        lab.sups.remove(sup)


async def test_case8_an_adopted_fix_task_keeps_its_overlays_and_diagnostics(lab: Lab) -> None:
    """Killed before the snapshot: the next broker prepares the task from what it recorded,
    unsaved buffers (overlays) and diagnostics included."""
    buffer = "def a():\n    return zz\n\n\ndef b():\n    return 2\n"
    diagnostic = {
        "message": "undefined name 'zz'",
        "start_line": 2,
        "end_line": 2,
        "source": "pyflakes",
    }
    work = Work.of(
        lab.repo,
        [
            {"say": "fixing zz"},
            {"edit": "app.py", "old": "    return zz\n", "new": "    return 1  # fixed\n"},
        ],
        "fixed",
        overlays={"app.py": buffer, "notes.txt": "unsaved notes\n"},
        action="fix",
        diagnostics=[diagnostic],
    )
    request = work.request(lab.repo)
    lab.broker(crash_at="before_snapshot", delegate=[request]).wait_killed()
    sup = await lab.restart()
    tid = await lab.the_task(sup, request)
    await lab.settle_in(sup, [tid])
    task = await check_task(sup, lab, tid, work)
    assert task.worktree
    assert (Path(task.worktree) / "notes.txt").read_text() == "unsaved notes\n"
    assert "undefined name 'zz'" in task.brief, task.brief
    assert task.brief.count("Diagnostics:") == 1, task.brief
