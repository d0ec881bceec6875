"""The websocket fan-out builds each frame once for every subscriber that wants it, and
encodes each event once (issue 18: the fan-out's cost per frame, not per subscriber)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from websockets.protocol import State

import baton.surfaces.ws.fanout as fanout_module
from baton.core.events import Event, EventType
from baton.surfaces.ws.fanout import Bucket, Conn, Fanout, Watch


class _Transport:
    def __init__(self) -> None:
        self.written: list[bytes] = []

    def get_write_buffer_size(self) -> int:
        return 0

    def write(self, data: bytes) -> None:
        self.written.append(data)


def _conn(wanted: frozenset[str] | None = None) -> tuple[Conn, _Transport]:
    transport = _Transport()
    ws = SimpleNamespace(
        protocol=SimpleNamespace(state=State.OPEN), transport=transport, send_data=lambda: None
    )
    conn = Conn(ws, True, Bucket(100, 100))  # type: ignore[arg-type]
    conn.subs[0] = Watch(0, wanted, held=None)
    return conn, transport


def _events() -> list[Event]:
    return [
        Event(EventType.TEXT, {"text": f"line {i}", "delta": True}, task_id=t, seq=i, ts=1.0)
        for i, t in enumerate(["a", "b", "a"], 1)
    ]


def test_one_frame_built_for_every_subscriber_and_each_event_encoded_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dumped: list[Any] = []
    real = json.dumps

    def counting(obj: Any, **kw: Any) -> str:
        dumped.append(obj)
        return real(obj, **kw)

    monkeypatch.setattr(fanout_module.json, "dumps", counting)
    everything = [_conn() for _ in range(50)]
    only_a, a_transport = _conn(frozenset({"a"}))
    fan = Fanout(send_buffer=1 << 20, stalled=2.0)
    fan.on_commit([c for c, _ in everything] + [only_a], _events())

    assert len(dumped) == 3  # each event once, whoever receives it
    frames = [t.written for _, t in everything]
    assert all(len(f) == 1 for f in frames)
    assert all(f[0] is frames[0][0] for f in frames)  # the same bytes, built once
    (mine,) = a_transport.written
    assert mine is not frames[0][0]
    assert b'"line 2"' not in mine and mine.count(b'"taskId": "a"') == 2
