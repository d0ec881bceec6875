"""Two Claude Code accounts (separate CLAUDE_CONFIG_DIRs, separate scripted model servers).

Account A answers 429 with a reset time: the task moves to account B of the same provider,
keeps its id and history, and succeeds. With only A allowed by the project, the task is held
until the reset and then runs on A. The real ``claude`` CLI from ``.cache/agents``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from baton.config.profiles import Profile, default_profiles
from baton.core.events import EventType
from baton.core.lifecycle import Completion, TaskState
from baton.runtime import accounts
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Limits, Supervisor
from tests.e2e.test_worker_claude import require
from tests.support.modelserver import (
    Answer,
    DenyAllProxy,
    ModelServer,
    RateLimit,
    Script,
    env_for_claude,
    write_file,
)

pytestmark = pytest.mark.agents

S = TaskState
WRITE = (write_file("hello.txt", "hello from B\n"), Answer("Wrote hello.txt."))


@dataclass
class Accounts:
    sup: Supervisor
    a: ModelServer
    b: ModelServer
    proxy: DenyAllProxy

    async def until(self, task_id: str, state: TaskState, timeout: float = 45) -> None:
        deadline = time.monotonic() + timeout
        while (task := await self.sup.get(task_id)).state != state:
            if time.monotonic() > deadline or task.state in (S.FAILED, S.ANSWERED):
                raise AssertionError(f"task {task_id} is {task.state}: {task.message}")
            await asyncio.sleep(0.05)


def claude(name: str, srv: ModelServer, home: Path, proxy: str) -> Profile:
    home.mkdir(parents=True)
    launch = env_for_claude(srv, home, proxy=proxy, max_retries=0)
    return Profile(
        name=name,
        provider="claude",
        binary=launch.argv[0],
        env=launch.env,
        config_dir=str(home / ".claude"),
        model="claude-sonnet-4-5",
    )


@asynccontextmanager
async def two_accounts(home: Path, tmp_path: Path, a: Script, b: Script) -> AsyncIterator[Accounts]:
    async with AsyncExitStack() as stack:
        proxy = stack.enter_context(DenyAllProxy())
        srv_a = stack.enter_context(ModelServer(a))
        srv_b = stack.enter_context(ModelServer(b))
        profiles = {
            **default_profiles(),
            "claude-a": claude("claude-a", srv_a, tmp_path / "account-a", proxy.url),
            "claude-b": claude("claude-b", srv_b, tmp_path / "account-b", proxy.url),
        }
        limits = Limits(stall_after=20, wall_clock=120, kill_grace=1.0)
        sup = Supervisor(home, profiles=profiles, limits=limits)
        await sup.start()
        stack.push_async_callback(sup.close)
        yield Accounts(sup, srv_a, srv_b, proxy)
        assert proxy.attempts == [], f"call-home attempts: {proxy.attempts}"


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BATON_CONFIG", str(tmp_path / "no-user-config.toml"))


async def test_account_a_rate_limited_hands_off_to_account_b(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    require("claude")
    (repo / ".baton.toml").write_text(
        'default_worker = "claude-a"\nonly = ["claude-a", "claude-b"]\n'
    )
    limit = RateLimit(times=None, reset_in=3600)
    async with two_accounts(baton_home, tmp_path, Script.of(limit), Script.of(*WRITE)) as w:
        task = await w.sup.delegate(DelegateRequest("Create hello.txt", root=str(repo)))
        assert task.worker == "claude-a"
        await w.until(task.id, S.REVIEW)
        done = await w.sup.get(task.id)
        assert done.worker == "claude-b" and done.completion == Completion.COMPLETED
        attempts = await w.sup.attempts(task.id)
        assert [(a.reason, a.worker, a.completion) for a in attempts] == [
            ("first", "claude-a", Completion.RATE_LIMIT),
            ("handoff", "claude-b", Completion.COMPLETED),
        ]
        assert attempts[1].session_id and attempts[1].session_id != attempts[0].session_id
        assert w.a.main_requests and w.b.main_requests  # each account saw its own traffic
        assert "Create hello.txt" in repr(w.b.main_requests[0].body)
        files, final = await w.sup.diff(task.id)
        assert final and [f.path for f in files] == ["hello.txt"]
        # The cool-down of A is shared through the store, until A's reset time.
        cooling = await w.sup.store.call(accounts.cooldowns)
        assert abs(cooling["claude-a"].until - limit.reset_at().timestamp()) < 5
        limited = [
            e.data["reason"]
            for e in await w.sup.events(task.id)
            if e.type == EventType.STATE and e.data["to"] == "rate_limited"
        ]
        assert len(limited) == 1 and "429" in limited[0]
        result = await w.sup.accept(task.id)
        assert not result.conflicts and (repo / "hello.txt").read_text() == "hello from B\n"


async def test_only_account_a_allowed_holds_until_the_reset_then_runs(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    require("claude")
    (repo / ".baton.toml").write_text('default_worker = "claude-a"\nonly = ["claude-a"]\n')
    limit = RateLimit(times=1, reset_in=3)
    script_a = Script.of(limit, *WRITE)
    async with two_accounts(baton_home, tmp_path, script_a, Script.of(Answer("unused"))) as w:
        task = await w.sup.delegate(DelegateRequest("Create hello.txt", root=str(repo)))
        await w.until(task.id, S.RATE_LIMITED)
        held = await w.sup.get(task.id)
        assert held.worker == "claude-a" and held.resets_at is not None
        assert abs(held.resets_at - limit.reset_at().timestamp()) < 2
        await w.until(task.id, S.REVIEW)
        attempts = await w.sup.attempts(task.id)
        assert [(a.reason, a.worker) for a in attempts] == [
            ("first", "claude-a"),
            ("retry", "claude-a"),
        ]
        assert attempts[1].started_at >= held.resets_at - 0.1
        assert w.b.main_requests == []  # B was never used: the project allows only A
        files, _ = await w.sup.diff(task.id)
        assert [f.path for f in files] == ["hello.txt"]
