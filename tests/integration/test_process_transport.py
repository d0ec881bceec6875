"""One Transport for both ways of speaking to an agent: start, parse, interrupt (real processes).

The native transport runs the fake agent per attempt; the ACP transport runs the real detached
runner with the fake ACP agent, so a second attempt goes to the same runner and an interrupt
is a ``session/cancel`` that keeps it.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest

from baton.acp.transport import AcpTransport, stop, transport_for
from baton.agents.base import Turn
from baton.agents.fake import FakeAdapter
from baton.config.profiles import Profile
from baton.core.events import Event, EventType
from baton.process.spawn import find_attempt, is_alive, read_exit, wait_exit
from baton.process.transport import NativeTransport, Started, Transport
from tests.conftest import fake_script
from tests.support.acp_fake_agent import script

FAKE_ACP = str(Path(__file__).resolve().parents[1] / "support" / "acp_fake_agent.py")


def acp_profile() -> Profile:
    options = {"transport": "acp", "acp_argv": [sys.executable, FAKE_ACP], "acp_idle_exit": 20}
    return Profile(name="acp", provider="fake", options=options)


def turn_in(repo: Path, task_dir: Path, prompt: str, reason: str = "first") -> Turn:
    return Turn(task_id="t1", prompt=prompt, cwd=str(repo), reason=reason, task_dir=str(task_dir))


async def events_of(transport: Transport, started: Started) -> list[Event]:
    """The parsed events of an attempt that has ended (its exit record is written)."""
    ended = await asyncio.wait_for(wait_exit(started.record), 60)
    assert ended is not None
    parser = transport.parser()
    found: list[Event] = []
    for line in started.record.out_path.read_text(encoding="utf-8").splitlines():
        found.extend(parser.feed(line))
    return found + parser.finish(ended.code, "")


async def test_the_native_transport_starts_and_parses_an_attempt(
    repo: Path, tmp_path: Path
) -> None:
    native = NativeTransport(FakeAdapter())
    assert (native.name, native.provider) == ("native", "fake")
    turn = turn_in(repo, tmp_path / "task", fake_script({"say": "hello there"}, summary="done"))
    started = await native.start(turn, Profile("fake", "fake"), 1)
    assert started.how.startswith(("sandboxed (", "UNSANDBOXED: "))  # for the task's log
    assert started.record.out_path == tmp_path / "task" / "attempt-1.out"
    evs = await events_of(native, started)
    assert [e.data["text"] for e in evs if e.type == EventType.FINAL] == ["done"]


async def test_the_native_interrupt_kills_the_attempt(repo: Path, tmp_path: Path) -> None:
    native = NativeTransport(FakeAdapter())
    turn = turn_in(repo, tmp_path / "task", fake_script({"sleep": 60}))
    started = await native.start(turn, Profile("fake", "fake"), 1)
    await _until_file(started.record.out_path)  # the agent runs (its session line came)
    await native.interrupt(tmp_path / "task", started.record, 1.0)
    assert not is_alive(started.record.pid, started.record.create_time)
    ended = read_exit(started.record.exit_path)
    assert ended is not None and ended.received == "SIGTERM"


async def test_a_turn_without_a_task_folder_is_refused(repo: Path) -> None:
    turn = Turn(task_id="t1", prompt="x", cwd=str(repo))
    for transport in (NativeTransport(FakeAdapter()), AcpTransport("fake")):
        with pytest.raises(ValueError, match="task's folder"):
            await transport.start(turn, acp_profile(), 1)


def test_transport_for_names_both_transports() -> None:
    assert isinstance(transport_for("native", "fake"), NativeTransport)
    assert isinstance(transport_for("acp", "fake"), AcpTransport)
    with pytest.raises(ValueError, match="unknown transport"):
        transport_for("carrier-pigeon", "fake")


async def test_the_acp_transport_keeps_one_runner_across_attempts(
    repo: Path, tmp_path: Path
) -> None:
    task_dir = tmp_path / "task"
    acp = AcpTransport("fake")
    assert (acp.name, acp.provider) == ("acp", "fake")
    try:
        first = await acp.start(turn_in(repo, task_dir, script({"say": "one"})), acp_profile(), 1)
        assert first.how.startswith("a new runner; its agent ")  # sandboxed or not
        evs = await events_of(acp, first)
        assert [e.data["text"] for e in evs if e.type == EventType.FINAL] == ["one"]

        # The next attempt is a prompt to the same runner; an interrupt cancels it over ACP.
        turn = turn_in(repo, task_dir, script({"sleep": 60}), reason="reply")
        second = await acp.start(turn, acp_profile(), 2)
        assert second.how == "the same session in the task's runner"
        assert second.record.pid == first.record.pid
        assert second.record.exit_path == task_dir / "attempt-2.exit"
        await _until_file(second.record.out_path)
        # A broker that never recorded the turn finds it: the runner holds every turn's claim.
        for n in (1, 2):
            found = await asyncio.to_thread(find_attempt, task_dir, n)
            assert found is not None
            assert (found.pid, found.create_time) == (first.record.pid, first.record.create_time)
            assert found.err_path == first.record.err_path
        assert found.out_path == second.record.out_path
        await acp.interrupt(task_dir, second.record, 1.0)
        evs = await events_of(acp, second)
        errors = [e.data.get("kind") for e in evs if e.type == EventType.ERROR]
        assert errors == ["cancelled"]
        assert is_alive(second.record.pid, second.record.create_time)  # the session stays
    finally:
        await stop(task_dir)


async def _until_file(path: Path, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not path.exists() or not path.read_bytes():
        assert time.monotonic() < deadline, f"{path} never got output"
        await asyncio.sleep(0.02)


def test_the_acp_parser_reads_the_runners_events() -> None:
    parser = AcpTransport("fake").parser()
    line = json.dumps(Event(EventType.FINAL, {"text": "ok"}).to_json())
    assert [e.type for e in parser.feed(line)] == [EventType.FINAL]
    assert parser.finish(0, "") == []
