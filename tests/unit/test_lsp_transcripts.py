"""The language server's transcript following, with a stand-in server and broker: events
that arrive while the stored ones are read are not lost nor shown twice, changes are sent
as lines from the first changed one with ``since``/``seq``, and an unfollowed task is quiet."""

from __future__ import annotations

import asyncio
from typing import Any

from baton.core.events import Event, EventType
from baton.core.task import Task
from baton.core.transcript import Transcript
from baton.surfaces.lsp.transcripts import TRANSCRIPT, Transcripts

TASK = Task(id="8kd0m2qh3xz", instruction="Do it", root="/repo", title="Do it")


def ev(seq: int, type: EventType, **data: Any) -> Event:
    return Event(type, dict(data), task_id=TASK.id, seq=seq, ts=1_700_000_000.0 + seq)


class Broker:
    def __init__(self, stored: list[Event]) -> None:
        self.stored = stored
        self.reading = asyncio.Event()
        self.release = asyncio.Event()

    async def get(self, task_id: str) -> Task:
        return TASK

    async def events(self, task_id: str) -> list[Event]:
        self.reading.set()
        await self.release.wait()
        return list(self.stored)


class Protocol:
    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.sent.append((method, params))


class Server:
    def __init__(self, broker: Broker) -> None:
        self.sup = broker
        self.protocol = Protocol()

    async def broker(self) -> Broker:
        return self.sup


async def test_events_during_the_read_are_folded_once_then_changes_are_sent() -> None:
    stored = [ev(1, EventType.STATE, to="running"), ev(2, EventType.TEXT, text="One. ", delta=True)]
    broker = Broker(stored)
    server = Server(broker)
    t = Transcripts(server, delay=0.01)  # type: ignore[arg-type]
    opening = asyncio.create_task(t.open(TASK.id, follow=True))
    await broker.reading.wait()
    # delivered while the read runs: one the read has too, one committed after it read
    late = ev(3, EventType.TOOL, name="edit", files=["a.py"])
    t.on_event(stored[1])
    t.on_event(late)
    broker.release.set()
    first = await opening
    stored.append(late)
    everything = Transcript.of(TASK, stored)
    assert first["following"] and first["seq"] == 3 and first["lines"] == everything.lines
    assert first["lines"].count("One.") == 1

    t.on_event(ev(4, EventType.TOOL_RESULT, name="edit", ok=True))
    t.on_event(ev(5, EventType.TEXT, text="Two. ", delta=True))
    await asyncio.sleep(0.1)
    ((method, change),) = server.protocol.sent
    assert method == TRANSCRIPT and change["since"] == 3 and change["seq"] == 5
    shown = first["lines"][: change["start"]] + change["lines"]
    stored += [ev(4, EventType.TOOL_RESULT, name="edit", ok=True)]
    stored += [ev(5, EventType.TEXT, text="Two. ", delta=True)]
    assert shown == Transcript.of(TASK, stored).lines

    broker.release.set()
    closed = await t.open(TASK.id, follow=False)
    assert closed["following"] is False and t.followed == {}
    t.on_event(ev(6, EventType.USAGE, input=1, output=1))
    await asyncio.sleep(0.05)
    assert len(server.protocol.sent) == 1
    t.close()
