"""A resumed session's tokens are counted once: the real Claude Code and Codex CLIs, a task and
a reply that resumes its session, against the scripted model server, which reports a known
number of input tokens for each request (a quarter of its body's characters).

Codex's ``turn.completed`` counts the whole thread: the resumed turn's report holds the first
turn's tokens again (0.171: 19,605 then 39,714 for turns of 19,605 and 20,109), so Baton
counts a resumed attempt's report less the session's last one. Claude Code's ``result``
counts one process (2.1.197: each attempt its own), so its reports add up as they are (a
version that restores the session's totals is covered by tests/unit/test_usage_streams.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baton.core import usage
from baton.core.events import EventType
from baton.core.lifecycle import TaskState
from tests.e2e.test_worker_claude import ROUND_TRIP, claude_profile, require, world
from tests.e2e.test_worker_codex import codex_profile
from tests.support.modelserver import Script
from tests.support.modelserver.server import estimate_tokens

pytestmark = pytest.mark.agents

PROFILES = {"claude": claude_profile, "codex": codex_profile}


@pytest.mark.parametrize("cli", sorted(PROFILES))
async def test_a_resumed_session_is_counted_once(
    cli: str, baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    require(cli)
    async with world(baton_home, tmp_path, Script.of(*ROUND_TRIP), PROFILES[cli]) as w:
        task_id = await w.delegate(repo, "Create hello.txt containing a greeting.")
        assert await w.settle(task_id) == TaskState.REVIEW
        first = len(w.srv.requests)
        await w.sup.reply(task_id, "Now also create second.txt.")
        assert await w.settle(task_id) == TaskState.REVIEW
        attempts = await w.sup.attempts(task_id)
        assert [a.reason for a in attempts] == ["first", "reply"]
        assert attempts[0].session_id == attempts[1].session_id  # the same session resumed
        sent = [estimate_tokens(json.dumps(r.body)) for r in w.srv.requests if r.status == 200]
        assert len(sent) == len(w.srv.requests) and first < len(sent)
        reported = {
            e.attempt: e.data["input"] + e.data["cached"]
            for e in await w.sup.events(task_id)
            if e.type == EventType.USAGE
        }
        task = await w.sup.get(task_id)
        counted = usage.of_task(task.options)
        per = task.options["usage_attempts"]
        # Each attempt counts the tokens of its own requests, and the task all of them once.
        assert [per[str(n)]["input"] + per[str(n)]["cached"] for n in (1, 2)] == [
            sum(sent[:first]),
            sum(sent[first:]),
        ], reported
        assert counted.input + counted.cached_input == sum(sent)
        if cli == "codex":  # what the CLI itself said: the thread's totals
            assert reported == {1: sum(sent[:first]), 2: sum(sent)}
        w.only_local()
