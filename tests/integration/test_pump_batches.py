"""An agent's output lines read at once reach the bus as one batch: every line's events
committed, in order, none twice, the stored offset at the end of the output; a burst is
cut into batches of at most ``PUMP_BATCH`` lines."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from baton.core.events import Event, EventType
from baton.core.lifecycle import TaskState
from baton.runtime import attempts
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor
from tests.conftest import fake_script, settle

LINES = 1500


async def test_a_burst_of_output_is_committed_whole_in_order_in_batches(
    sup: Supervisor, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(attempts, "PUMP_BATCH", 100)
    batches: list[int] = []
    emit = sup.bus.emit_nowait

    def counting(events: Sequence[Event], offset: Any = None) -> Any:
        texts = [e for e in events if e.type == EventType.TEXT and "x" in str(e.data)]
        if texts:
            batches.append(len(texts))
        return emit(events, offset)

    monkeypatch.setattr(sup.bus, "emit_nowait", counting)
    script = fake_script({"stream": LINES, "rate": 100_000, "size": 40})
    task = await sup.delegate(DelegateRequest(instruction=script, root=str(repo)))
    assert await settle(sup, task.id, timeout=60) == TaskState.ANSWERED
    events = await sup.events(task.id)
    streamed = [e for e in events if e.type == EventType.TEXT and "x" in str(e.data)]
    stamps = [float(str(e.data["text"]).split()[0]) for e in streamed]
    assert len(streamed) == LINES
    assert stamps == sorted(stamps)  # in the order written, none twice
    seqs = [e.seq for e in events]
    assert seqs == sorted(set(seqs))
    assert sum(batches) == LINES
    assert max(batches) <= 100  # a backlog is cut, the loop served between two
    assert len(batches) < LINES / 2  # lines read together were emitted together
    attempt = (await sup.store.call(lambda s: s.attempts(task.id)))[-1]
    assert attempt.out_offset == Path(attempt.out_path).stat().st_size
