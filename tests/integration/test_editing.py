"""Editing a task that has not started (runtime/editing.py): the queued task runs its new
version, never the old one, once; a started task is refused; a task cancelled before it
started is requeued."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

import baton.runtime.accounts as accounts
from baton.config.profiles import Profile, default_profiles
from baton.core.lifecycle import TaskState as S
from baton.runtime.editing import TaskEdit
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor, TaskError
from tests.conftest import fake_script, settle


def edit(new: str) -> dict[str, str]:
    return {"edit": "app.py", "old": "    return 1\n", "new": f"    return {new}\n"}


async def one_slot(home: Path) -> Supervisor:
    profiles = default_profiles()
    profiles["fake"].concurrency = 1
    profiles["fake-b"] = Profile(name="fake-b", provider="fake")
    s = Supervisor(home, profiles=profiles)
    await s.start()
    return s


async def test_a_queued_task_runs_its_edited_version_once(baton_home: Path, repo: Path) -> None:
    s = await one_slot(baton_home)
    try:
        busy = await s.delegate(
            DelegateRequest(instruction=fake_script({"sleep": 1.5}), root=str(repo))
        )
        waiting = await s.delegate(
            DelegateRequest(instruction=fake_script(edit("10")), root=str(repo))
        )
        await asyncio.sleep(0.3)
        assert (await s.get(waiting.id)).state == S.QUEUED
        edited = await s.edit(waiting.id, TaskEdit(instruction=fake_script(edit("20"))))
        assert edited.state == S.QUEUED and "return 20" in edited.instruction
        # An edit while it still waits: the last one wins, the worker too. The new version
        # still runs when the old worker's slot frees: nothing starts it a second time.
        slow = fake_script({"sleep": 3}, edit("30"))
        await s.edit(waiting.id, TaskEdit(instruction=slow, worker="fake-b"))
        assert await settle(s, waiting.id, 60) == S.REVIEW
        assert await settle(s, busy.id, 60) == S.ANSWERED
        files, _ = await s.diff(waiting.id)
        (hunk,) = [h for f in files for h in f.hunks]
        assert hunk.new_text == "    return 30\n"
        attempts = await s.attempts(waiting.id)
        assert [(a.reason, a.worker) for a in attempts] == [("first", "fake-b")]
        logs = [e.data["message"] for e in await s.events(waiting.id) if e.type == "log"]
        said = "edited by the user: instruction; worker fake → fake-b"
        assert any(m.startswith(said) for m in logs), logs
        # Started: refused, with what to do instead.
        with pytest.raises(TaskError, match="only a task that has not started"):
            await s.edit(waiting.id, TaskEdit(title="late"))
    finally:
        await s.close()


async def test_prerequisites_and_scope_are_edited_and_cycles_refused(
    sup: Supervisor, repo: Path
) -> None:
    first = await sup.delegate(
        DelegateRequest(instruction=fake_script({"sleep": 30}), root=str(repo))
    )
    second = await sup.delegate(
        DelegateRequest(instruction=fake_script(edit("10")), root=str(repo), depends_on=[first.id])
    )
    third = await sup.delegate(
        DelegateRequest(instruction=fake_script(), root=str(repo), depends_on=[second.id])
    )
    with pytest.raises(TaskError, match=f"cycle: {second.id} → {third.id} → {second.id}"):
        await sup.edit(second.id, TaskEdit(depends_on=[first.id, third.id]))
    with pytest.raises(TaskError, match="no task"):
        await sup.edit(second.id, TaskEdit(depends_on=["zzzzzzzz"]))
    assert (await sup.get(second.id)).state == S.QUEUED
    # No prerequisite any more: it starts now, with its new scope.
    done = await sup.edit(second.id, TaskEdit(depends_on=[], scope=["app.py"]))
    assert done.scope == ["app.py"] and "depends_on" not in done.options
    assert await settle(sup, second.id, 60) == S.REVIEW
    assert (await sup.get(third.id)).state == S.QUEUED  # still after the second
    await sup.cancel(first.id)


async def test_a_task_cancelled_before_it_started_is_requeued(sup: Supervisor, repo: Path) -> None:
    first = await sup.delegate(
        DelegateRequest(instruction=fake_script({"sleep": 30}), root=str(repo))
    )
    second = await sup.delegate(
        DelegateRequest(instruction=fake_script(edit("1")), root=str(repo), depends_on=[first.id])
    )
    await sup.cancel(second.id)
    assert (await sup.get(second.id)).state == S.CANCELLED
    requeued = await sup.edit(
        second.id, TaskEdit(instruction=fake_script(edit("10")), depends_on=[])
    )
    assert requeued.state in (S.QUEUED, S.PREPARING, S.RUNNING)
    assert await settle(sup, second.id, 60) == S.REVIEW
    # Cancelled after it started: refused.
    await sup.cancel(first.id)
    assert await settle(sup, first.id, 60) == S.CANCELLED
    with pytest.raises(TaskError, match="cancelled after it started"):
        await sup.edit(first.id, TaskEdit())


async def test_a_task_waiting_out_a_cool_down_keeps_waiting_then_runs_the_edit(
    sup: Supervisor, repo: Path
) -> None:
    until = time.time() + 2.5
    await sup.store.call(accounts.record_cooldown, "fake", "fake", until, "rate limited")
    held = await sup.delegate(DelegateRequest(instruction=fake_script(edit("10")), root=str(repo)))
    await sup.edit(held.id, TaskEdit(instruction=fake_script(edit("20"))))
    await asyncio.sleep(1.0)
    assert (await sup.get(held.id)).state == S.QUEUED  # the cool-down still holds it
    assert await settle(sup, held.id, 60) == S.REVIEW
    assert time.time() >= until
    files, _ = await sup.diff(held.id)
    assert [h.new_text for f in files for h in f.hunks] == ["    return 20\n"]
    assert len(await sup.attempts(held.id)) == 1
