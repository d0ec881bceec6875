"""Claude Code as a real Baton worker: Supervisor → real CLI → scripted model server on 127.0.0.1.

A task runs end to end (worktree, diff, reply resuming the same session, accept), and each
failure of the model server ends the task with the right completion code well inside the
watchdog time. A deny-all proxy (HTTPS_PROXY/HTTP_PROXY, NO_PROXY=127.0.0.1) must see nothing.
The CLI comes from `scripts/install-agents` (`.cache/agents`); when it is missing the tests are
skipped LOUDLY. The helpers here are shared with test_worker_codex.py.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from baton.config.profiles import Profile, default_profiles
from baton.core.events import EventType
from baton.core.lifecycle import Completion, TaskState
from baton.process.sandbox import status as sandbox_status
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Limits, Supervisor
from tests.conftest import STOPPED
from tests.support.modelserver import (
    Answer,
    CutStream,
    Dead,
    DenyAllProxy,
    Launch,
    ModelServer,
    NoFinish,
    RateLimit,
    Script,
    ServerError,
    Turn,
    Unauthorized,
    agent_bin,
    env_for_claude,
    write_file,
)

pytestmark = pytest.mark.agents

S = TaskState
#: The idle watchdog of these tests: every failure must be judged well before it fires.
STALL_AFTER = 20.0
WAIT = 30.0


def require(cli: str) -> Path:
    binary = agent_bin(cli)
    if not binary.exists():
        pytest.skip(
            f"!!! AGENT CLI '{cli}' IS NOT INSTALLED ({binary} missing): "
            "run scripts/install-agents before the agent tests !!!"
        )
    return binary


@dataclass
class World:
    """A scripted model server, a deny-all proxy and a Supervisor with one real-CLI profile."""

    srv: ModelServer
    proxy: DenyAllProxy
    sup: Supervisor
    worker: str

    async def delegate(self, repo: Path, instruction: str) -> str:
        req = DelegateRequest(instruction=instruction, root=str(repo), worker=self.worker)
        return (await self.sup.delegate(req)).id

    async def settle(self, task_id: str, timeout: float = WAIT) -> TaskState:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            task = await self.sup.get(task_id)
            if task.state in STOPPED:
                return task.state
            await asyncio.sleep(0.05)
        raise AssertionError(f"task {task_id} still {(await self.sup.get(task_id)).state}")

    def only_local(self) -> None:
        assert self.proxy.attempts == [], f"call-home attempts: {self.proxy.attempts}"
        for rec in self.srv.requests:
            assert rec.client[0] == "127.0.0.1"
        assert self.srv.errors == []


@contextmanager
def server(script: Script | None) -> Iterator[ModelServer]:
    """A running server, or (script None) one whose port is closed: connections are refused."""
    if script is None:
        srv = ModelServer(Script.of(Answer("never sent")))
        srv.stop()
        yield srv
        return
    with ModelServer(script) as srv:
        yield srv


@asynccontextmanager
async def world(
    home: Path,
    tmp_path: Path,
    script: Script | None,
    make_profile: Callable[[ModelServer, Path, str], Profile],
) -> AsyncIterator[World]:
    agent_home = tmp_path / "agent-home"
    agent_home.mkdir()
    with DenyAllProxy() as proxy, server(script) as srv:
        profile = make_profile(srv, agent_home, proxy.url)
        profiles = {**default_profiles(), profile.name: profile}
        limits = Limits(stall_after=STALL_AFTER, wall_clock=120, kill_grace=1.0)
        sup = Supervisor(home, profiles=profiles, limits=limits)
        await sup.start()
        try:
            yield World(srv, proxy, sup, profile.name)
        finally:
            await sup.close()


def profile_from(name: str, provider: str, launch: Launch, config_dir: Path, **kw: str) -> Profile:
    return Profile(
        name=name,
        provider=provider,
        binary=launch.argv[0],
        env=launch.env,
        config_dir=str(config_dir),
        **kw,  # type: ignore[arg-type]
    )


def claude_profile(srv: ModelServer, home: Path, proxy: str) -> Profile:
    launch = env_for_claude(srv, home, proxy=proxy, max_retries=0)
    return profile_from(
        "claude-test", "claude", launch, home / ".claude", model="claude-sonnet-4-5"
    )


def user_texts(body: object) -> str:
    """Everything a request body says, flattened (to look for earlier turns in it)."""
    return repr(body)


async def check_round_trip(w: World, repo: Path, second_prompt: str) -> str:
    """Task → review with hello.txt; reply → same session, second.txt too; accept → repo.
    Returns the task's id."""
    t0 = time.monotonic()
    task_id = await w.delegate(repo, "Create hello.txt containing a greeting.")
    assert await w.settle(task_id) == S.REVIEW, (await w.sup.get(task_id)).message
    files, final = await w.sup.diff(task_id)
    assert final and [f.path for f in files] == ["hello.txt"]
    assert [h.new_text for h in files[0].hunks] == ["hello from the model\n"]
    assert not (repo / "hello.txt").exists()  # nothing reaches the repo before accept
    first = await w.sup.get(task_id)
    assert first.session_id and first.summary == "Wrote hello.txt."

    await w.sup.reply(task_id, second_prompt)
    assert await w.settle(task_id) == S.REVIEW, (await w.sup.get(task_id)).message
    attempts = await w.sup.attempts(task_id)
    assert [a.reason for a in attempts] == ["first", "reply"]
    assert attempts[1].session_id == attempts[0].session_id == first.session_id
    assert all(a.completion == Completion.COMPLETED for a in attempts)
    # The resumed session carried the first turn's history to the model.
    last = w.srv.main_requests[-1]
    assert "Create hello.txt" in user_texts(last.body) and second_prompt in user_texts(last.body)
    files, final = await w.sup.diff(task_id)
    assert final and sorted(f.path for f in files) == ["hello.txt", "second.txt"]

    result = await w.sup.accept(task_id)
    assert not result.conflicts and not result.refused
    assert (repo / "hello.txt").read_text() == "hello from the model\n"
    assert (repo / "second.txt").read_text() == "second edit\n"
    assert (await w.sup.get(task_id)).state == S.APPLIED
    events = await w.sup.events(task_id)
    kinds = {e.type for e in events}
    assert {EventType.SESSION, EventType.TOOL, EventType.TOOL_RESULT, EventType.USAGE} <= kinds
    tools = [e.data for e in events if e.type == EventType.TOOL]
    assert ["hello.txt"] in [t["files"] for t in tools] and ["second.txt"] in [
        t["files"] for t in tools
    ]
    w.only_local()
    print(f"round trip: {time.monotonic() - t0:.1f} s")
    return task_id


ROUND_TRIP: tuple[Turn, ...] = (
    write_file("hello.txt", "hello from the model\n"),
    Answer("Wrote hello.txt."),
    write_file("second.txt", "second edit\n"),
    Answer("Wrote second.txt."),
)

#: failure → (script or None for a refused connection, completion, words in the message)
FAILURES: dict[str, tuple[Script | None, Completion, str]] = {
    "401": (Script.of(Unauthorized(times=None)), Completion.AUTH, "401"),
    "500": (Script.of(ServerError(times=None)), Completion.WORKER_ERROR, "500"),
    "cut": (Script.of(CutStream(times=None)), Completion.NETWORK, "ECONNRESET"),
    "nofinish": (Script.of(NoFinish(times=None)), Completion.NETWORK, "cut off"),
    "dead": (Script.of(Dead()), Completion.NETWORK, "ECONNRESET"),
    "down": (None, Completion.NETWORK, "ConnectionRefused"),
}


async def check_failure(
    w: World, repo: Path, completion: Completion, words: str, within: float = STALL_AFTER
) -> None:
    t0 = time.monotonic()
    task_id = await w.delegate(repo, "Create hello.txt containing a greeting.")
    assert await w.settle(task_id) == S.FAILED
    took = time.monotonic() - t0
    task = await w.sup.get(task_id)
    assert task.completion == completion, task.message
    assert words in task.message, task.message
    assert took < within, f"took {took:.1f} s"
    (attempt,) = await w.sup.attempts(task_id)
    assert attempt.completion == completion
    w.only_local()


async def check_rate_limit(w: World, repo: Path, resets_at: float | None) -> None:
    """The task waits in rate_limited until the reset time (observed, then cancelled)."""
    task_id = await w.delegate(repo, "Create hello.txt containing a greeting.")
    assert await w.settle(task_id) == S.RATE_LIMITED
    task = await w.sup.get(task_id)
    assert task.completion == Completion.RATE_LIMIT and "429" in task.message
    assert task.resets_at is not None and task.resets_at > time.time() + 30
    if resets_at is not None:
        assert abs(task.resets_at - resets_at) < 5
    await asyncio.sleep(0.3)
    assert (await w.sup.get(task_id)).state == S.RATE_LIMITED  # held, not retried at once
    await w.sup.cancel(task_id)
    assert (await w.sup.get(task_id)).state == S.CANCELLED
    w.only_local()


# --- the tests --------------------------------------------------------------------------------


async def test_claude_task_round_trip(baton_home: Path, repo: Path, tmp_path: Path) -> None:
    require("claude")
    async with world(baton_home, tmp_path, Script.of(*ROUND_TRIP), claude_profile) as w:
        task_id = await check_round_trip(w, repo, "Now also create second.txt.")
        # Both turns ran in the OS sandbox where one can run (node, its config folder, git).
        logs = [str(e.data.get("message")) for e in await w.sup.events(task_id)]
        sandboxed = [m for m in logs if "sandboxed (bubblewrap" in m]
        assert len(sandboxed) == (2 if sandbox_status().works else 0), logs


async def test_claude_rate_limit_holds_until_reset(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    require("claude")
    limit = RateLimit(times=None, reset_in=3600)
    async with world(baton_home, tmp_path, Script.of(limit), claude_profile) as w:
        await check_rate_limit(w, repo, limit.reset_at().timestamp())


@pytest.mark.parametrize("failure", list(FAILURES))
async def test_claude_failure(baton_home: Path, repo: Path, tmp_path: Path, failure: str) -> None:
    require("claude")
    script, completion, words = FAILURES[failure]
    async with world(baton_home, tmp_path, script, claude_profile) as w:
        await check_failure(w, repo, completion, words)
