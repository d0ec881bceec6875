"""Checks: Baton runs the project's checks in the worktree and lets the worker repair."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from baton.core.events import EventType
from baton.core.lifecycle import TaskState
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor, TaskError
from tests.conftest import fake_script, settle

# Passes when app.py's a() returns 10.
CHECK = {
    "name": "tests",
    "argv": [
        sys.executable,
        "-c",
        "import sys; t = open('app.py').read(); "
        "print('a() returns', t.split('return ')[1].split()[0]); "
        "sys.exit(0 if 'return 10' in t else 1)",
    ],
    "timeout": 20,
}


def request(repo: Path, *steps: dict[str, object], **options: object) -> DelegateRequest:
    return DelegateRequest(
        instruction=fake_script(*steps), root=str(repo), options={"verify": [CHECK], **options}
    )


async def test_checks_fail_then_the_worker_repairs_in_round_two(
    sup: Supervisor,
    repo: Path,
) -> None:
    task = await sup.delegate(
        request(
            repo,
            {"edit": "app.py", "old": "    return 1\n", "new": "    return 5\n"},
            {"end_turn": "done, I think"},
            {"edit": "app.py", "old": "    return 5\n", "new": "    return 10\n"},
        )
    )
    assert await settle(sup, task.id) == TaskState.REVIEW
    done = await sup.get(task.id)
    assert done.message.startswith("checks passed (tests ")
    attempts = await sup.attempts(task.id)
    assert [a.reason for a in attempts] == ["first", "repair"]
    events = await sup.events(task.id)
    verdicts = [(e.data["exit"], e.data["passed"]) for e in events if e.type == EventType.VERIFY]
    assert verdicts == [(1, False), (0, True)]
    states = [e.data["to"] for e in events if e.type == EventType.STATE]
    assert states == [
        "queued",
        "preparing",
        "running",
        "verifying",
        "running",
        "verifying",
        "review",
    ]
    # The repair prompt carried the failing output.
    prompts = sorted((sup.home / "tasks" / task.id / "prompts").glob("*repair*"))
    assert prompts and "a() returns 5" in prompts[-1].read_text()
    evidence = done.options["evidence"]
    assert [c["passed"] for c in evidence["checks"]] == [True]
    assert evidence["files"] == ["app.py"] and evidence["repair_rounds"] == 1
    files, _ = await sup.diff(task.id)
    assert [h.new_text for f in files for h in f.hunks] == ["    return 10\n"]


async def test_checks_still_failing_after_the_rounds_reach_review_marked_failed(
    sup: Supervisor,
    repo: Path,
) -> None:
    task = await sup.delegate(
        request(
            repo,
            {"edit": "app.py", "old": "    return 1\n", "new": "    return 5\n"},
            repair_rounds=1,
        )
    )
    assert await settle(sup, task.id) == TaskState.REVIEW
    done = await sup.get(task.id)
    assert done.message.startswith("checks failed: tests failed (exit 1)")
    assert [a.reason for a in await sup.attempts(task.id)] == ["first", "repair"]


async def test_a_malformed_check_is_refused_at_delegate(
    sup: Supervisor,
    repo: Path,
) -> None:
    with pytest.raises(TaskError, match="argv"):
        await sup.delegate(
            DelegateRequest(instruction="x", root=str(repo), options={"verify": [{"argv": "make"}]})
        )
