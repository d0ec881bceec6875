"""The status the notifier sends is read again only when it can have changed: the counts
after a task changed state (or when asked, or for other roots), the sandbox after the
settings changed — not at each flush, each being a trip to a worker thread."""

from __future__ import annotations

from typing import Any

import pytest

import baton.surfaces.lsp.notify as notify
from baton.core.events import Event, EventType
from baton.core.lifecycle import TaskState
from baton.core.task import Task
from baton.surfaces.lsp.asking import Questions


class Sup:
    def __init__(self) -> None:
        self.tasks: dict[str, Task] = {}
        self.counted = 0
        self.gets = 0
        self.settings = self

    def last_good(self, root: str) -> None:
        return None

    async def count_by_state(self, roots: list[str], failed_since: float) -> dict[str, int]:
        self.counted += 1
        return {"running": len(self.tasks)}

    async def get(self, task_id: str) -> Task:
        self.gets += 1
        return Task(id=task_id, instruction="x", root="/r", state=TaskState.ANSWERED)


class Protocol:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    def notify(self, method: str, params: Any) -> None:
        self.sent.append((method, params))


class Server:
    def __init__(self) -> None:
        self.supervisor = Sup()
        self.roots = {"/r"}
        self.protocol = Protocol()
        self.questions = Questions()
        self.reviews: dict[str, Any] = {}


async def test_counts_and_sandbox_are_read_again_only_when_they_can_have_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looked: list[str | None] = []

    def sandbox_state(mode: str | None) -> dict[str, Any]:
        looked.append(mode)
        return {"agents": "unsandboxed"}

    monkeypatch.setattr(notify, "sandbox_state", sandbox_state)
    server = Server()
    sup = server.supervisor
    sup.tasks["abc"] = Task(id="abc", instruction="x", root="/r", state=TaskState.RUNNING)
    notifier = notify.Notifier(server, followed=lambda task_id: False)  # type: ignore[arg-type]

    first = await notifier.send_status(recount=True)
    assert first == {"running": 1, "needsInput": 0, "review": 0, "failed": 0,
                     "sandbox": {"agents": "unsandboxed"}}  # fmt: skip
    assert (sup.counted, len(looked)) == (1, 1)

    # A flush after output only (no state change): nothing is read again.
    await notifier.flush(set(), set(), set())
    assert (sup.counted, len(looked)) == (1, 1)

    # A state change: the counts are read again.
    notifier.on_event(Event(EventType.STATE, {"to": "running"}, task_id="abc"))
    notifier.close()  # the flush it armed is run by hand here
    await notifier.flush({"abc"}, set(), set())
    assert (sup.counted, len(looked), sup.gets) == (2, 1, 1)
    assert [m for m, _ in server.protocol.sent] == [notify.STATUS, notify.TASKS]

    # Other roots are counted again.
    server.roots.add("/other")
    await notifier.flush(set(), set(), set())
    assert sup.counted == 3

    # Asked for (the baton.status command): counted again; the sandbox still stands.
    await notifier.send_status(recount=True)
    assert (sup.counted, len(looked)) == (4, 1)
