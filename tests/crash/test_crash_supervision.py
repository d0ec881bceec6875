"""Issue 14's cases 6, 7 and 9: a killed wrapper, a setting changed under a waiting task,
and a rate limit that never lifts. One broker, in this process; nothing is armed."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from baton.core.events import EventType
from baton.core.lifecycle import Completion, TaskState
from baton.runtime.requests import DelegateRequest
from tests.crash.harness import DEADLINE, Lab, alive
from tests.crash.invariants import Work, check_task

pytestmark = pytest.mark.crash

S = TaskState


async def wait_until(what: str, check: object, timeout: float = DEADLINE) -> None:
    """Poll the coroutine function ``check`` until it returns true."""
    deadline = time.monotonic() + timeout
    while not await check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f} s")
        await asyncio.sleep(0.05)


async def test_case6_killing_the_wrapper_ends_the_agent_and_settles_the_task(lab: Lab) -> None:
    steps: list[dict[str, object]] = [{"say": "working"}]
    for i in range(60):  # ~15 s of appends into the worktree
        steps += [{"append": "ticks.txt", "text": f"tick {i}\n"}, {"sleep": 0.25}]
    work = Work.of(lab.repo, steps, "never finishes")
    sup = await lab.restart()
    task = await sup.delegate(DelegateRequest(**work.request(lab.repo)))

    async def running() -> bool:
        attempts = await sup.attempts(task.id)
        texts = [e for e in await sup.events(task.id) if e.type == EventType.TEXT]
        return bool(attempts and attempts[-1].pid and lab.runs(task.id) and texts)

    await wait_until("the agent started", running)
    wrapper = (await sup.attempts(task.id))[-1].pid
    assert wrapper
    [run] = lab.runs(task.id)
    os.kill(wrapper, signal.SIGKILL)  # the wrapper only, not its group

    async def settled() -> bool:
        return (await sup.get(task.id)).state in (S.FAILED, S.INTERRUPTED)

    await wait_until("the task settled failed or interrupted", settled)
    got = await sup.get(task.id)
    deadline = time.monotonic() + 10
    while alive(run):
        assert time.monotonic() < deadline, (
            f"the agent (pid {run['pid']}) still runs, unsupervised, after its wrapper was "
            f"killed and the task settled {got.state}"
        )
        await asyncio.sleep(0.1)
    assert got.worktree
    ticks = Path(got.worktree) / "ticks.txt"
    before = ticks.read_text() if ticks.exists() else ""
    await asyncio.sleep(1.5)
    after = ticks.read_text() if ticks.exists() else ""
    assert after == before, "something still writes into the worktree after the task settled"
    await lab.no_lingering()
    message = got.message.lower()
    assert any(w in message for w in ("kill", "vanish", "wrapper", "signal", "gone")), (
        f"the task settled {got.state} with an unclear message: {got.message!r}"
    )


SOLO = '[profiles.solo]\nprovider = "fake"\nconcurrency = 1\n'


async def test_case7_a_task_waiting_for_its_slot_survives_its_worker_being_disabled(
    lab: Lab,
) -> None:
    """The worker decided at delegate time runs the waiting task, though the project's
    settings disabled it meanwhile: it reaches review, it does not hang in preparing."""
    config = lab.repo / ".baton.toml"
    config.write_text(SOLO)
    first = Work.of(
        lab.repo,
        [{"say": "holding the slot"}, {"sleep": 3.5}, {"write": "first.txt", "content": "1\n"}],
        "first done",
        worker="solo",
    )
    second = Work.of(
        lab.repo,
        [{"say": "my turn"}, {"write": "second.txt", "content": "2\n"}],
        "second done",
        worker="solo",
    )
    sup = await lab.restart()
    a = await sup.delegate(DelegateRequest(**first.request(lab.repo)))

    async def holding() -> bool:
        return bool(lab.runs(a.id))

    await wait_until("the first task's agent started", holding)
    b = await sup.delegate(DelegateRequest(**second.request(lab.repo)))
    assert b.worker == "solo"
    config.write_text(SOLO + "enabled = false\n")

    async def disabled() -> bool:
        return not sup.profiles_for(lab.repo)["solo"].enabled

    await wait_until("the broker read the changed settings", disabled, timeout=15)
    assert not lab.runs(b.id), "the second task started before the first freed the slot"
    await lab.settle_in(sup, [a.id, b.id], timeout=30)
    await check_task(sup, lab, a.id, first)
    await check_task(sup, lab, b.id, second)


def rate_limited(lab: Lab) -> Work:
    steps = [{"say": "trying"}] + [{"rate_limit": {"retry_after": 0.3}} for _ in range(20)]
    return Work.of(lab.repo, steps, "never")


RATE_LIMIT_SETTINGS = 'on_rate_limit = "hold"\nonly = ["fake"]\n\n[cooldown]\ndefault = 0.3\n'


async def test_case9_a_rate_limit_that_never_lifts_fails_after_max_attempts(lab: Lab) -> None:
    (lab.repo / ".baton.toml").write_text("max_attempts = 3\n" + RATE_LIMIT_SETTINGS)
    sup = await lab.restart()
    task = await sup.delegate(DelegateRequest(**rate_limited(lab).request(lab.repo)))

    async def failed() -> bool:
        return (await sup.get(task.id)).state == S.FAILED

    started = time.monotonic()
    await wait_until("the task gave up", failed, timeout=30)
    got = await sup.get(task.id)
    assert got.completion == Completion.RATE_LIMIT, (got.completion, got.message)
    attempts = await sup.attempts(task.id)
    assert len(attempts) == 3, [(a.n, a.reason, a.completion) for a in attempts]
    assert len(lab.runs(task.id)) == 3
    assert "3" in got.message and "attempt" in got.message.lower(), got.message
    assert "rate" in got.message.lower(), got.message
    assert time.monotonic() - started < 30
    await asyncio.sleep(1.0)  # and it stays failed: no timer starts it again
    assert (await sup.get(task.id)).state == S.FAILED
    assert len(await sup.attempts(task.id)) == 3
    await lab.no_lingering()


async def test_case9_without_the_setting_a_default_cap_still_ends_the_task(lab: Lab) -> None:
    (lab.repo / ".baton.toml").write_text(RATE_LIMIT_SETTINGS)
    sup = await lab.restart()
    task = await sup.delegate(DelegateRequest(**rate_limited(lab).request(lab.repo)))

    async def failed() -> bool:
        return (await sup.get(task.id)).state == S.FAILED

    try:
        await wait_until("the task gave up", failed, timeout=30)
    except AssertionError:
        n = len(await sup.attempts(task.id))
        raise AssertionError(
            f"a persistent rate limit never settles: {n} attempts so far"
        ) from None
    got = await sup.get(task.id)
    assert got.completion == Completion.RATE_LIMIT, (got.completion, got.message)
    assert 1 < len(await sup.attempts(task.id)) <= 10
