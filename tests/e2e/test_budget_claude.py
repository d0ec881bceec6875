"""Claude Code's tokens and a token budget, against the scripted model server (issue 19).

The model server reports known token counts for each of the agent's requests (``Script.usage``);
the task shows exactly their sum and the cost the price table gives for them (Claude Code's own
figure, ``reported``, which is the shipped list price of its model). A token budget stops the
real CLI's task while it works — Claude Code says each message's usage as it streams — with
completion ``budget``, its work so far in review, and a raised cap continues the same session
to the end; a cost cap counts those running tokens at the config's ``[prices."MODEL"]``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.core.budget import Caps
from baton.core.events import EventType
from baton.core.lifecycle import Completion, TaskState
from baton.core.usage import DEFAULT_PRICES, REPORTED, Usage, of_task
from baton.runtime.requests import DelegateRequest
from tests.e2e.test_worker_claude import claude_profile, require, world
from tests.support.modelserver import Answer, Script, ToolCall, write_file

pytestmark = pytest.mark.agents

S = TaskState
#: What each of the agent's requests reports: input and output tokens.
PER_REQUEST = (1000, 50)
MODEL = "claude-sonnet-4-5"  # claude_profile's model


async def test_claude_task_shows_the_known_tokens_and_their_cost(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    require("claude")
    turns = (write_file("hello.txt", "hello\n"), Answer("Wrote hello.txt."))
    async with world(baton_home, tmp_path, Script(turns, usage=PER_REQUEST), claude_profile) as w:
        task_id = await w.delegate(repo, "Create hello.txt containing a greeting.")
        assert await w.settle(task_id) == S.REVIEW, (await w.sup.get(task_id)).message
        assert len(w.srv.main_requests) == 2
        used = of_task((await w.sup.get(task_id)).options)
        assert (used.input, used.cached_input, used.output) == (2000, 0, 100)
        # $3 per million in, $15 out: 2000 x 3 + 100 x 15 = 7500 per million.
        assert used.cost == pytest.approx(DEFAULT_PRICES[MODEL].cost(used)) == pytest.approx(0.0075)
        assert used.cost_source == REPORTED
        w.only_local()


def slow_shell(command: str) -> ToolCall:
    """A Bash call that takes a while (the budget's stop comes while it runs)."""
    return ToolCall(("Bash",), {"command": command, "description": "wait"})


async def test_a_token_budget_stops_claude_and_a_raised_cap_finishes_it(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    require("claude")
    turns = (
        write_file("hello.txt", "hello\n"),  # 1000 tokens in
        slow_shell("sleep 20 && echo late > late.txt"),  # 2000: over the cap of 1500
        write_file("second.txt", "second\n"),  # the resumed session goes on here
        Answer("Wrote hello.txt and second.txt."),
    )
    async with world(baton_home, tmp_path, Script(turns, usage=PER_REQUEST), claude_profile) as w:
        request = DelegateRequest(
            "Create hello.txt, then second.txt.",
            root=str(repo),
            worker=w.worker,
            options={"budget": {"tokens": 1500}},
        )
        task_id = (await w.sup.delegate(request)).id
        assert await w.settle(task_id) == S.REVIEW, (await w.sup.get(task_id)).message
        stopped = await w.sup.get(task_id)
        assert stopped.completion == Completion.BUDGET, stopped.message
        assert "tokens cap reached" in stopped.message and "of 1500 tokens" in stopped.message
        files, _ = await w.sup.diff(task_id)
        assert [f.path for f in files] == ["hello.txt"]  # its work so far; the shell never ended
        [stop] = [
            e.data
            for e in await w.sup.events(task_id)
            if e.type == EventType.BUDGET and e.data["kind"] == "stop"
        ]
        assert stop["scope"] == "task" and stop["limit"] == 1500 and stop["used"] >= 2000

        await w.sup.retry(task_id, Caps(tokens=100_000))
        assert await w.settle(task_id) == S.REVIEW, (await w.sup.get(task_id)).message
        done = await w.sup.get(task_id)
        assert done.completion == Completion.COMPLETED, done.message
        files, final = await w.sup.diff(task_id)
        assert final and sorted(f.path for f in files) == ["hello.txt", "second.txt"]
        assert not (Path(done.worktree or "") / "late.txt").exists()
        attempts = await w.sup.attempts(task_id)
        assert [a.completion for a in attempts] == [Completion.BUDGET, Completion.COMPLETED]
        assert attempts[1].session_id == attempts[0].session_id  # the same session went on
        # Each attempt's own report: the first ended before its turn said one, so its count
        # while it ran stands (two requests); the second made two more.
        per = done.options["usage_attempts"]
        assert Usage.from_json(per["1"]).input == 2000 and Usage.from_json(per["2"]).input == 2000
        w.only_local()


async def test_a_cost_cap_priced_by_the_config_stops_claude(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    """While the turn runs Claude Code has said no cost yet: its running tokens are priced
    from the price table, here the config's ``[prices."MODEL"]``, and that cost is capped."""
    require("claude")
    (repo / ".baton.toml").write_text(
        f'[budget]\ntask_cost = 1.5\n[prices."{MODEL}"]\ninput = 1000.0\noutput = 0.0\n'
    )
    turns = (
        write_file("hello.txt", "hello\n"),  # 1000 tokens in: $1.00 at $1000 per million
        slow_shell("sleep 20 && echo late > late.txt"),  # 2000: $2.00, over $1.50
        Answer("never reached"),
    )
    async with world(baton_home, tmp_path, Script(turns, usage=PER_REQUEST), claude_profile) as w:
        task_id = await w.delegate(repo, "Create hello.txt, then wait.")
        assert await w.settle(task_id) == S.REVIEW, (await w.sup.get(task_id)).message
        task = await w.sup.get(task_id)
        assert task.completion == Completion.BUDGET, task.message
        assert "cost cap reached ($2.0000 of $1.5000)" in task.message
        used = of_task(task.options)
        assert (used.input, used.cost, used.cost_source) == (2000, 2.0, "estimated")
        w.only_local()
