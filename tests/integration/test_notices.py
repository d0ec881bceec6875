"""The broker's desktop notices (baton.surfaces.notices) on a real Supervisor: the budget
kinds, which are built elsewhere, arrive here as the events websocket.md documents — a
``budget`` event of kind ``alert``, a ``state`` event with completion ``budget`` — given to
the listener as the bus would (the ``budget`` event type is not in this branch's
EventType yet: a stand-in with the same fields carries it)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from baton.core.events import Event, EventType
from baton.core.lifecycle import TaskState
from baton.runtime import DelegateRequest, Supervisor
from baton.surfaces.notices import DesktopNotices
from tests.conftest import fake_script, settle, user_config

ALERT = {
    "kind": "alert",
    "scope": "profile",
    "name": "fake",
    "day": "2026-12-01",
    "measure": "cost",
    "used": 8.0,
    "limit": 10.0,
    "percent": 80,
}


class Shown:
    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []
        self.arrived = asyncio.Event()

    async def __call__(self, title: str, body: str) -> None:
        self.items.append((title, body))
        self.arrived.set()

    async def next(self, timeout: float = 20.0) -> tuple[str, str]:
        await asyncio.wait_for(self.arrived.wait(), timeout)
        self.arrived.clear()
        return self.items[-1]


async def asking_task(sup: Supervisor, repo: Path) -> str:
    req = DelegateRequest(instruction=fake_script({"ask": "Go on?"}), root=str(repo))
    task_id = (await sup.delegate(req)).id
    assert await settle(sup, task_id) == TaskState.NEEDS_INPUT
    return task_id


def budget_event(task_id: str, data: dict[str, Any]) -> Any:
    return SimpleNamespace(type="budget", data=data, task_id=task_id)


async def test_budget_alert_and_stop_are_notices(
    sup: Supervisor, repo: Path, tmp_path: Path
) -> None:
    user_config(tmp_path, "[notify]\ndesktop = true\n")
    shown = Shown()
    notices = DesktopNotices(sup, shown, quiet=0.2, gap=0.1)
    notices.start()
    try:
        task_id = await asking_task(sup, repo)
        assert await shown.next() == ("Baton: needs input", "Do the scripted work: Go on?")

        notices.on_event(budget_event(task_id, ALERT))
        assert await shown.next() == (
            "Baton: budget alert",
            "Do the scripted work: 80 % of today's cost budget ($8.00 of $10.00), profile fake",
        )
        # A stop is said by the state event that follows it, once.
        notices.on_event(budget_event(task_id, {"kind": "stop", "message": "cap"}))
        stopped = {"from": "running", "to": "review", "completion": "budget"}
        notices.on_event(
            Event(EventType.STATE, {**stopped, "reason": "token cap reached"}, task_id=task_id)
        )
        assert await shown.next() == (
            "Baton: stopped by its budget",
            "Do the scripted work: token cap reached",
        )
        await asyncio.sleep(1.0)
        assert len(shown.items) == 3
    finally:
        await notices.close()


async def test_only_the_kinds_the_config_names(sup: Supervisor, repo: Path, tmp_path: Path) -> None:
    user_config(tmp_path, '[notify]\ndesktop = true\non = ["budget"]\n')
    shown = Shown()
    notices = DesktopNotices(sup, shown, quiet=0.2, gap=0.1)
    notices.start()
    try:
        task_id = await asking_task(sup, repo)  # an input notice: not wanted
        await asyncio.sleep(1.0)
        assert shown.items == []
        notices.on_event(budget_event(task_id, ALERT))
        title, _ = await shown.next()
        assert title == "Baton: budget alert" and len(shown.items) == 1
    finally:
        await notices.close()
