"""Failures end fast with Baton's own bounds: each real CLI, configured as a user would (no retry
settings of its own), against a scripted model server on 127.0.0.1.

The profiles here carry no retry bound (no ``CLAUDE_CODE_MAX_RETRIES``, no Gemini
``maxAttempts``, no Codex ``request_max_retries``): what ends each failure within
:data:`WITHIN` seconds is what the adapter sets. The idle watchdog is far above that, so it
cannot be what ends them. Each test prints the seconds it took (the figures of issue 16).

A rate limit that stops after the cool-down: the task waits in ``rate_limited`` until the reset
time the server named, then Baton tries again and the task reaches review.

OpenCode has no setting to bound its retries of a 500 or a dead server (over a minute, nothing
on stdout): Baton has it log each failed model request on stderr and stops it after
``opencode.MAX_FAILURES`` of them. Its log does not carry the HTTP status, so the message
names OpenCode's own words for the failure.

The CLIs come from `scripts/install-agents` (`.cache/agents`); a missing one is skipped LOUDLY.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from baton.agents import claude, gemini
from baton.config.profiles import Profile
from baton.core.lifecycle import Completion, TaskState
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Limits, Supervisor
from tests.support.modelserver import (
    Answer,
    Dead,
    DenyAllProxy,
    Launch,
    ModelServer,
    RateLimit,
    Script,
    ServerError,
    Unauthorized,
    agent_bin,
    env_for_claude,
    env_for_codex,
    env_for_gemini,
    env_for_opencode,
    env_for_pi,
    write_file,
)

pytestmark = [pytest.mark.agents, pytest.mark.slow]

S = TaskState
C = Completion
#: Every failure must settle within this many seconds (issue 16).
WITHIN = 30.0
#: The idle watchdog: far above WITHIN, so it is never what ends a failure here.
STALL_AFTER = 120.0
SETTLED = {S.REVIEW, S.ANSWERED, S.FAILED, S.CANCELLED, S.INTERRUPTED, S.APPLIED}


def require(cli: str) -> None:
    if not agent_bin(cli).exists():
        pytest.skip(f"!!! AGENT CLI '{cli}' IS NOT INSTALLED: run scripts/install-agents first !!!")


def _claude(srv: ModelServer, home: Path, proxy: str) -> tuple[Launch, Path]:
    launch = env_for_claude(srv, home, proxy=proxy)
    del launch.env["CLAUDE_CODE_MAX_RETRIES"]  # the adapter's bound, not the test's
    return launch, home / ".claude"


def _gemini(srv: ModelServer, home: Path, proxy: str) -> tuple[Launch, Path]:
    launch = env_for_gemini(srv, home, proxy=proxy)
    settings = home / ".gemini" / "settings.json"
    data = json.loads(settings.read_text())
    del data["general"]["maxAttempts"]  # the adapter's bound, not the test's
    settings.write_text(json.dumps(data))
    return launch, home


def _codex(srv: ModelServer, home: Path, proxy: str) -> tuple[Launch, Path]:
    launch = env_for_codex(srv, home, proxy=proxy)
    config = home / ".codex" / "config.toml"
    lines = config.read_text().splitlines()
    config.write_text("\n".join(ln for ln in lines if "max_retries" not in ln) + "\n")
    return launch, home / ".codex"


def _pi(srv: ModelServer, home: Path, proxy: str) -> tuple[Launch, Path]:
    launch = env_for_pi(srv, home, proxy=proxy)
    settings = home / ".pi" / "agent" / "settings.json"
    data = json.loads(settings.read_text())
    del data["retry"]  # Pi's own retry settings: its defaults, as a user has them
    settings.write_text(json.dumps(data))
    return launch, home / ".pi" / "agent"


def _opencode(srv: ModelServer, home: Path, proxy: str) -> tuple[Launch, Path]:
    return env_for_opencode(srv, home, proxy=proxy), home / "opencode-account"


@dataclass(frozen=True)
class Cli:
    name: str
    model: str
    make: Callable[[ModelServer, Path, str], tuple[Launch, Path]]
    #: failure → (completion, regex on the task's message)
    failures: dict[str, tuple[Completion, str]]
    #: main requests one attempt makes on a rate limit (the CLI's first try and its retries)
    requests_per_attempt: int = 1


CLIS = {
    "claude": Cli(
        "claude",
        "claude-sonnet-4-5",
        _claude,
        {
            "401": (C.AUTH, r"authentication_failed|401"),
            "500": (C.WORKER_ERROR, r"500"),
            "dead": (C.NETWORK, r"ECONNRESET|Connection"),
        },
        requests_per_attempt=claude.MAX_RETRIES + 1,
    ),
    "gemini": Cli(
        "gemini",
        "gemini-2.5-flash",
        _gemini,
        {
            "401": (C.AUTH, r"401"),
            "500": (C.WORKER_ERROR, r"500"),
            "dead": (C.NETWORK, r"fetch failed"),
        },
        requests_per_attempt=gemini.MAX_ATTEMPTS,
    ),
    "codex": Cli(
        "codex",
        "gpt-5.5",
        _codex,
        {
            "401": (C.AUTH, r"401"),
            "500": (C.WORKER_ERROR, r"500|high demand"),
            "dead": (C.NETWORK, r"error sending request|stream disconnected"),
        },
    ),
    "pi": Cli(
        "pi",
        "mock/mock-model",
        _pi,
        {
            "401": (C.AUTH, r"401"),
            "500": (C.WORKER_ERROR, r"500"),
            "dead": (C.NETWORK, r"Connection error"),
        },
    ),
    "opencode": Cli(
        "opencode",
        "mock/mock-model",
        _opencode,
        {
            "401": (C.AUTH, r"401"),
            "500": (C.WORKER_ERROR, r"mock internal error .*3 model requests in a row failed"),
            "dead": (C.NETWORK, r"Cannot connect to API"),
        },
    ),
}
FAILURES = {"401": Unauthorized(times=None), "500": ServerError(times=None), "dead": Dead()}


@asynccontextmanager
async def one_worker(
    cli: Cli, baton_home: Path, tmp_path: Path, script: Script
) -> AsyncIterator[tuple[Supervisor, str, ModelServer, DenyAllProxy]]:
    require(cli.name)
    home = tmp_path / "agent-home"
    home.mkdir()
    with DenyAllProxy() as proxy, ModelServer(script) as srv:
        launch, config_dir = cli.make(srv, home, proxy.url)
        profile = Profile(
            name=f"{cli.name}-fast",
            provider=cli.name,
            binary=launch.argv[0],
            model=cli.model,
            env=launch.env,
            config_dir=str(config_dir),
        )
        limits = Limits(stall_after=STALL_AFTER, wall_clock=300, kill_grace=1.0)
        sup = Supervisor(
            baton_home, profiles={profile.name: profile}, default_worker=profile.name, limits=limits
        )
        await sup.start()
        try:
            yield sup, profile.name, srv, proxy
        finally:
            await sup.close()


async def settle(sup: Supervisor, task_id: str, timeout: float) -> TaskState:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = await sup.get(task_id)
        if task.state in SETTLED:
            return task.state
        await asyncio.sleep(0.1)
    task = await sup.get(task_id)
    raise AssertionError(f"task {task_id} still {task.state} after {timeout:.0f} s: {task.message}")


def cases() -> list[tuple[str, str]]:
    return [(cli, failure) for cli, spec in CLIS.items() for failure in spec.failures]


@pytest.mark.parametrize(("name", "failure"), cases())
async def test_each_failure_settles_within_30_s_with_the_right_completion(
    baton_home: Path, repo: Path, tmp_path: Path, name: str, failure: str
) -> None:
    cli = CLIS[name]
    completion, words = cli.failures[failure]
    async with one_worker(cli, baton_home, tmp_path, Script.of(FAILURES[failure])) as (
        sup,
        worker,
        _srv,
        proxy,
    ):
        t0 = time.monotonic()
        req = DelegateRequest(instruction="Create hello.txt.", root=str(repo), worker=worker)
        task_id = (await sup.delegate(req)).id
        state = await settle(sup, task_id, WITHIN + 30)  # the bound is asserted below
        took = time.monotonic() - t0
        task = await sup.get(task_id)
        print(f"{name} {failure}: {task.state} {task.completion} in {took:.1f} s")
        assert state == S.FAILED, task.message
        assert task.completion == completion, task.message
        assert re.search(words, task.message), task.message
        assert took <= WITHIN, f"{name} {failure} took {took:.1f} s: {task.message}"
        assert proxy.attempts == []


@pytest.mark.parametrize("name", ["claude", "gemini"])
async def test_a_rate_limit_that_stops_after_the_cool_down_reaches_review(
    baton_home: Path, repo: Path, tmp_path: Path, name: str
) -> None:
    cli = CLIS[name]
    limit = RateLimit(times=cli.requests_per_attempt, retry_after=1, reset_in=6)
    script = Script.of(limit, write_file("hello.txt", "hi\n"), Answer("Wrote hello.txt."))
    async with one_worker(cli, baton_home, tmp_path, script) as (sup, worker, _srv, proxy):
        t0 = time.monotonic()
        req = DelegateRequest(instruction="Create hello.txt.", root=str(repo), worker=worker)
        task_id = (await sup.delegate(req)).id
        seen_limited = False
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            task = await sup.get(task_id)
            seen_limited = seen_limited or task.state == S.RATE_LIMITED
            if task.state in SETTLED:
                break
            await asyncio.sleep(0.1)
        task = await sup.get(task_id)
        took = time.monotonic() - t0
        print(f"{name} 429 then ok: {task.state} in {took:.1f} s")
        assert seen_limited, "the task never waited for the reset"
        assert task.state == S.REVIEW, task.message
        files, final = await sup.diff(task_id)
        assert final and [f.path for f in files] == ["hello.txt"]
        attempts = await sup.attempts(task_id)
        assert attempts[0].completion == C.RATE_LIMIT
        assert attempts[-1].completion == C.COMPLETED
        assert proxy.attempts == []
