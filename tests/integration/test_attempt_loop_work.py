"""What following an attempt costs the event loop: an agent's output lines read at once
reach the bus as one batch (every line's events committed, in order, none twice, the stored
offset at the end of the output; a burst cut into batches of at most ``PUMP_BATCH`` lines);
with a pidfd the watch wakes at the agent's end, not 20 times a second to look for it."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import baton.process.exitwatch as exitwatch
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


async def test_the_watch_looks_rarely_while_a_pidfd_tells_the_end(
    sup: Supervisor, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []
    wait = exitwatch.ExitWatch.wait

    async def counted(self: exitwatch.ExitWatch, timeout: float) -> None:
        waits.append(timeout)
        await wait(self, timeout)

    monkeypatch.setattr(exitwatch.ExitWatch, "wait", counted)
    script = fake_script({"say": "a"}, {"sleep": 2.0}, {"say": "b"})
    task = await sup.delegate(DelegateRequest(instruction=script, root=str(repo)))
    started = time.monotonic()
    assert await settle(sup, task.id, timeout=30) == TaskState.ANSWERED
    took = time.monotonic() - started
    assert waits and max(waits) == attempts.WATCHED_POLL  # the limits are 30 s and more
    # About 2 s / 0.5 s looks, not 2 s / 0.05 s (40); the end woke it (no extra 0.5 s).
    assert len(waits) <= 12, waits
    assert took < 2.0 + 5.0


def test_an_acp_turn_s_end_is_looked_for_at_the_poll() -> None:
    """An ACP runner outlives its turn (the session stays open): its pidfd does not tell the
    turn's end, its exit record does — so an ACP attempt's watch keeps the short poll."""
    from types import SimpleNamespace

    from baton.runtime.broker import Limits

    limits = Limits(stall_after=30)
    owner = SimpleNamespace(limits=limits)
    watched = SimpleNamespace(watching=True)
    unwatched = SimpleNamespace(watching=False)

    def interval(transport: str, ended: object) -> float:
        live = SimpleNamespace(transport=SimpleNamespace(name=transport))
        return attempts.Attempts._watch_interval(owner, live, ended)  # type: ignore[arg-type]

    assert interval("native", watched) == attempts.WATCHED_POLL
    assert interval("acp", watched) == limits.poll
    assert interval("native", unwatched) == limits.poll
    short = SimpleNamespace(limits=Limits(stall_after=1.0))
    live = SimpleNamespace(transport=SimpleNamespace(name="native"))
    assert attempts.Attempts._watch_interval(short, live, watched) == 0.1  # type: ignore[arg-type]


async def test_a_first_turn_reads_no_attempts_from_the_store(
    sup: Supervisor, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attempts cap counts recorded attempts: a task that has none yet (its first turn)
    starts without asking the store's thread, which every delegation waits on."""
    from baton.runtime.turns import TurnLoop

    asked: list[str] = []
    reasons = TurnLoop._reasons

    async def counted(self: TurnLoop, task: Any) -> list[str]:
        asked.append(task.id)
        return await reasons(self, task)

    monkeypatch.setattr(TurnLoop, "_reasons", counted)
    script = fake_script({"say": "hello"})
    task = await sup.delegate(DelegateRequest(instruction=script, root=str(repo)))
    assert await settle(sup, task.id, timeout=30) == TaskState.ANSWERED
    assert asked == []
