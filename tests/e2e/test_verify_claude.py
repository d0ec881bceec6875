"""Verified results with a real agent CLI: Claude Code's change fails the project's check,
Baton resumes its session with the failing output, and the repair passes (one round)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from baton.runtime.requests import DelegateRequest
from tests.e2e.test_worker_claude import S, claude_profile, require, world
from tests.support.modelserver import Answer, Script, write_file

pytestmark = pytest.mark.agents

CHECK = {
    "name": "greeting",
    "argv": [
        sys.executable,
        "-c",
        "import sys; t = open('hello.txt').read(); print('hello.txt says:', t.strip()); "
        "sys.exit(0 if t.startswith('hello') else 1)",
    ],
    "timeout": 30,
}


async def test_claude_repairs_a_failing_check_in_one_round(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    require("claude")
    script = Script.of(
        write_file("hello.txt", "goodbye\n"),
        Answer("Wrote hello.txt."),
        write_file("hello.txt", "hello, fixed\n"),
        Answer("Fixed the greeting."),
    )
    async with world(baton_home, tmp_path, script, claude_profile) as w:
        task = await w.sup.delegate(
            DelegateRequest(
                instruction="Create hello.txt with a greeting.",
                root=str(repo),
                worker=w.worker,
                options={"verify": [CHECK], "repair_rounds": 2},
            )
        )
        assert await w.settle(task.id, timeout=90) == S.REVIEW, (await w.sup.get(task.id)).message
        done = await w.sup.get(task.id)
        assert done.message.startswith("checks passed (greeting ")
        attempts = await w.sup.attempts(task.id)
        assert [a.reason for a in attempts] == ["first", "repair"]
        assert attempts[1].session_id == attempts[0].session_id
        # The repair turn carried the failing check's output to the model.
        last = w.srv.main_requests[-1]
        assert "hello.txt says: goodbye" in repr(last.body)
        files, _ = await w.sup.diff(task.id)
        assert [h.new_text for f in files for h in f.hunks] == ["hello, fixed\n"]
        w.only_local()
