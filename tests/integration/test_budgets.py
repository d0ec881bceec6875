"""Budgets and caps with the real fake agent (issue 19): a token budget and a step cap stop a
task with completion ``budget``, its work so far in review, and a raised cap continues the
same session to the end; a daily budget alerts at 80 % once, and refuses and stops work
once it is used up."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from baton.core.budget import Caps
from baton.core.events import EventType
from baton.core.lifecycle import Completion, TaskState
from baton.core.task import next_moves
from baton.core.usage import of_task
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor, TaskError
from tests.conftest import fake_script

S = TaskState


async def until(sup: Supervisor, task_id: str, *states: S, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while (task := await sup.get(task_id)).state not in states:
        if time.monotonic() > deadline:
            events = [(e.attempt, str(e.type), e.data) for e in await sup.events(task_id)]
            raise AssertionError(f"{task.state}: {task.message}; events {events}")
        await asyncio.sleep(0.05)
    return task


async def budget_events(sup: Supervisor, task_id: str) -> list[dict[str, Any]]:
    return [e.data for e in await sup.events(task_id) if e.type == EventType.BUDGET]


def configure(repo: Path, text: str) -> None:
    (repo / ".baton.toml").write_text(text)


async def files_of(sup: Supervisor, task_id: str) -> list[str]:
    files, _ = await sup.diff(task_id)
    return sorted(f.path for f in files)


async def test_a_token_budget_stops_the_task_and_a_raised_cap_finishes_it(
    sup: Supervisor, repo: Path
) -> None:
    configure(repo, "[budget]\ntask_tokens = 1000\n")
    brief = fake_script(
        {"usage": {"input": 400, "output": 200}},
        {"write": "a.txt", "content": "a\n"},
        {"usage": {"input": 900, "output": 300}},  # running totals: 1200 tokens now
        {"sleep": 3},
        {"write": "b.txt", "content": "b\n"},
        summary="wrote a and b",
    )
    task = await sup.delegate(DelegateRequest(brief, root=str(repo)))
    stopped = await until(sup, task.id, S.REVIEW, S.FAILED)
    assert stopped.state == S.REVIEW, stopped.message
    assert stopped.completion == Completion.BUDGET
    assert "tokens cap reached (1200 tokens of 1000 tokens)" in stopped.message
    assert await files_of(sup, task.id) == ["a.txt"]  # the work so far, reviewable
    [stop] = await budget_events(sup, task.id)
    assert stop["kind"] == "stop" and stop["scope"] == "task" and stop["measure"] == "tokens"
    assert (stop["used"], stop["limit"]) == (1200, 1000)
    assert "retry" in next_moves(stopped)

    try:
        await sup.retry(task.id)  # the same cap: nothing is left
    except TaskError as exc:
        assert "--max-tokens" in str(exc)
    else:
        raise AssertionError("a retry under the reached cap was not refused")

    await sup.retry(task.id, Caps(tokens=5000))
    assert (await sup.get(task.id)).state == S.RUNNING  # moved before retry answers
    done = await until(sup, task.id, S.REVIEW, S.FAILED, S.ANSWERED)
    assert done.state == S.REVIEW and done.completion == Completion.COMPLETED, done.message
    assert await files_of(sup, task.id) == ["a.txt", "b.txt"]
    attempts = await sup.attempts(task.id)
    assert [a.completion for a in attempts] == [Completion.BUDGET, Completion.COMPLETED]
    assert attempts[1].session_id == attempts[0].session_id  # the same session went on
    assert of_task(done.options).tokens == 1200
    assert done.options["budget"] == {"tokens": 5000}


async def test_a_step_cap_stops_the_task_and_a_raised_cap_finishes_it(
    sup: Supervisor, repo: Path
) -> None:
    brief = fake_script(
        {"write": "a.txt", "content": "a\n"},
        {"write": "b.txt", "content": "b\n"},
        {"sleep": 0.5},
        {"write": "c.txt", "content": "c\n"},  # the third call: past the cap of two
        {"sleep": 3},
        {"write": "d.txt", "content": "d\n"},
    )
    request = DelegateRequest(brief, root=str(repo), options={"budget": {"steps": 2}})
    task = await sup.delegate(request)
    stopped = await until(sup, task.id, S.REVIEW, S.FAILED)
    assert stopped.completion == Completion.BUDGET, stopped.message
    assert "steps cap reached (3 steps of 2 steps)" in stopped.message
    files = await files_of(sup, task.id)
    assert files[:2] == ["a.txt", "b.txt"] and "d.txt" not in files

    try:
        await sup.retry(task.id)
    except TaskError as exc:
        assert "--max-steps" in str(exc)
    else:
        raise AssertionError("a retry under the reached cap was not refused")
    await sup.retry(task.id, Caps(steps=10))
    assert (await sup.get(task.id)).state == S.RUNNING
    done = await until(sup, task.id, S.REVIEW, S.FAILED, S.ANSWERED)
    assert done.completion == Completion.COMPLETED, done.message
    assert await files_of(sup, task.id) == ["a.txt", "b.txt", "c.txt", "d.txt"]


async def test_a_daily_budget_alerts_at_80_percent_once(sup: Supervisor, repo: Path) -> None:
    configure(repo, "[budget]\nday_tokens = 1000\n")
    first = await sup.delegate(
        DelegateRequest(fake_script({"usage": {"input": 800, "output": 50}}), root=str(repo))
    )
    await until(sup, first.id, S.ANSWERED, S.FAILED)
    [alert] = await budget_events(sup, first.id)
    assert alert["kind"] == "alert" and alert["scope"] == "project"
    assert (alert["percent"], alert["measure"], alert["used"], alert["limit"]) == (
        80,
        "tokens",
        850,
        1000,
    )
    assert alert["name"] == str(repo.resolve()) and alert["day"]

    second = await sup.delegate(
        DelegateRequest(fake_script({"usage": {"input": 20, "output": 0}}), root=str(repo))
    )
    done = await until(sup, second.id, S.ANSWERED, S.FAILED)
    assert done.state == S.ANSWERED, done.message
    assert await budget_events(sup, second.id) == []  # 870: past 80 % again, said once

    third = await sup.delegate(
        DelegateRequest(fake_script({"usage": {"input": 50, "output": 0}}), root=str(repo))
    )
    await until(sup, third.id, S.ANSWERED, S.FAILED)
    assert [(a["kind"], a["percent"]) for a in await budget_events(sup, third.id)] == [
        ("alert", 90)
    ]


async def test_a_used_up_daily_budget_stops_the_running_task_and_refuses_the_next(
    sup: Supervisor, repo: Path
) -> None:
    configure(repo, "[budget]\nday_tokens = 1000\n")
    brief = fake_script({"usage": {"input": 1100, "output": 100}}, {"sleep": 5})
    first = await sup.delegate(DelegateRequest(brief, root=str(repo)))
    stopped = await until(sup, first.id, S.FAILED, S.ANSWERED, S.REVIEW)
    assert stopped.state == S.FAILED and stopped.completion == Completion.BUDGET
    assert "project's daily tokens cap reached" in stopped.message
    said = await budget_events(sup, first.id)
    [stop] = [d for d in said if d["kind"] == "stop"]
    assert stop["scope"] == "project" and stop["day"] and stop["used"] == 1200
    assert sorted(d["percent"] for d in said if d["kind"] == "alert") == [80, 90]

    second = await sup.delegate(DelegateRequest(fake_script({"say": "hi"}), root=str(repo)))
    refused = await until(sup, second.id, S.FAILED, S.ANSWERED)
    assert refused.state == S.FAILED and refused.completion == Completion.BUDGET
    assert "project's daily tokens cap reached (1200 tokens of 1000 tokens)" in refused.message
    assert await sup.attempts(second.id) == []  # no agent was started


async def test_a_seconds_cap_stops_a_task_that_runs_too_long(sup: Supervisor, repo: Path) -> None:
    brief = fake_script({"write": "a.txt", "content": "a\n"}, {"sleep": 30})
    request = DelegateRequest(brief, root=str(repo), options={"budget": {"seconds": 1.5}})
    started = time.monotonic()
    task = await sup.delegate(request)
    stopped = await until(sup, task.id, S.REVIEW, S.FAILED)
    assert stopped.completion == Completion.BUDGET and "seconds cap reached" in stopped.message
    assert time.monotonic() - started < 20  # not the sleep's end
    assert await files_of(sup, task.id) == ["a.txt"]


async def test_a_cost_cap_counts_the_price_table(sup: Supervisor, repo: Path) -> None:
    configure(repo, '[budget]\ntask_cost = 0.5\n[prices."m-test"]\ninput = 1000\noutput = 1000\n')
    brief = fake_script({"usage": {"input": 600, "output": 0}}, {"sleep": 30})
    task = await sup.delegate(DelegateRequest(brief, root=str(repo), model="m-test"))
    stopped = await until(sup, task.id, S.FAILED, S.REVIEW, S.ANSWERED)
    assert stopped.state == S.FAILED and stopped.completion == Completion.BUDGET
    assert "cost cap reached ($0.6000 of $0.5000)" in stopped.message  # 600 x $1000 / M
    assert of_task(stopped.options).cost == 0.6


async def test_a_profiles_daily_budget_stops_its_task(sup: Supervisor, repo: Path) -> None:
    configure(repo, "[profiles.fake.budget]\nday_tokens = 500\n")
    brief = fake_script({"usage": {"input": 600, "output": 0}}, {"sleep": 30})
    task = await sup.delegate(DelegateRequest(brief, root=str(repo)))
    stopped = await until(sup, task.id, S.FAILED, S.REVIEW, S.ANSWERED)
    assert stopped.completion == Completion.BUDGET
    assert "profile fake's daily tokens cap reached (600 tokens of 500 tokens)" in stopped.message
    [stop] = [d for d in await budget_events(sup, task.id) if d["kind"] == "stop"]
    assert (stop["scope"], stop["name"]) == ("profile", "fake")


async def test_a_reply_to_a_task_over_its_cap_is_refused(sup: Supervisor, repo: Path) -> None:
    brief = fake_script(
        {"write": "a.txt", "content": "a\n"}, {"write": "b.txt", "content": "b\n"}, {"sleep": 5}
    )
    task = await sup.delegate(
        DelegateRequest(brief, root=str(repo), options={"budget": {"steps": 1}})
    )
    stopped = await until(sup, task.id, S.REVIEW, S.FAILED)
    assert (stopped.state, stopped.completion) == (S.REVIEW, Completion.BUDGET)
    try:
        await sup.reply(task.id, "go on")
    except TaskError as exc:
        assert "steps cap reached" in str(exc) and "--max-steps" in str(exc)
    else:
        raise AssertionError("a reply over the cap was not refused")
    assert (await sup.get(task.id)).state == S.REVIEW  # still reviewable as it was
