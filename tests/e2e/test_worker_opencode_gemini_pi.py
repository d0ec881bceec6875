"""OpenCode, Gemini CLI and Pi as real Baton workers: Supervisor → real CLI → scripted model server.

Per CLI: a task runs end to end (worktree, diff, a reply resuming the same session whose
second edit lands in the same task, accept), and every failure of the model server ends its
task with the right completion code and a clear message well inside the watchdog time. The six
failures run at once, in one Supervisor, each with a profile pointing at its own server.
A deny-all proxy (HTTPS_PROXY/HTTP_PROXY, NO_PROXY=127.0.0.1,localhost) must see nothing.

Which watchdog ends each OpenCode hang is part of the expectations: a stream that keeps
breaking or ending without a finish reason shows in OpenCode's output and the *parser* stops it
(network, "… times in a row"); a server answering 500 or resetting every connection makes
OpenCode retry with nothing on stdout, but each failed request is logged on stderr, which the
parser reads too and stops after a few (its log's words, "… in a row failed"). No CLI here is
left to the supervisor's idle watchdog (``Limits.stall_after``) any more: the "silent" group
stays for a CLI that would be.

The CLIs come from `scripts/install-agents` (`.cache/agents`); a missing one is skipped LOUDLY.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from baton.config.profiles import Profile
from baton.core.diff import FileDiff
from baton.core.events import EventType
from baton.core.lifecycle import Completion, TaskState
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Limits, Supervisor
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
    env_for_gemini,
    env_for_opencode,
    env_for_pi,
    write_file,
)

pytestmark = [pytest.mark.agents, pytest.mark.slow]

S = TaskState
C = Completion
#: The idle watchdog while failures the CLI reports in its stream are judged: each must end
#: (by the stream, not by this) well before it. Generous because a CLI prints nothing while it
#: starts, and six starting at once on a small, busy machine take a while (OpenCode alone
#: spends ~4.5 CPU-seconds).
STALL_AFTER = 40.0
#: The idle watchdog for failures a CLI retries silently (OpenCode on 500 / a dead server):
#: it is what ends them.
SILENT_STALL_AFTER = 25.0
SETTLED = {S.REVIEW, S.ANSWERED, S.FAILED, S.CANCELLED, S.INTERRUPTED, S.RATE_LIMITED, S.APPLIED}

ProfileFor = Callable[[ModelServer, Path, str], Launch]


@dataclass(frozen=True)
class Cli:
    """How to make a profile of one CLI, and what each failure must end in."""

    name: str
    make: ProfileFor
    model: str
    config_dir: Callable[[Path], Path]
    #: failure → (completion, a regex the task's message must match)
    failures: dict[str, tuple[Completion, str]] = field(default_factory=dict)
    #: failures the CLI retries without printing anything: the idle watchdog must end them
    silent: frozenset[str] = frozenset()


def _opencode(srv: ModelServer, home: Path, proxy: str) -> Launch:
    return env_for_opencode(srv, home, proxy=proxy)


def _gemini(srv: ModelServer, home: Path, proxy: str) -> Launch:
    return env_for_gemini(srv, home, proxy=proxy, max_attempts=2)


def _pi(srv: ModelServer, home: Path, proxy: str) -> Launch:
    return env_for_pi(srv, home, proxy=proxy, max_retries=1)


RESETS = r"limit resets at"
CLIS = {
    "opencode": Cli(
        "opencode",
        _opencode,
        "mock/mock-model",
        # an extra, empty config folder (OPENCODE_CONFIG_DIR) the adapter must pre-fill
        lambda home: home / "opencode-account",
        {
            "401": (C.AUTH, r"401 .*invalid api key"),
            "429": (C.RATE_LIMIT, RESETS),
            "500": (C.WORKER_ERROR, r"mock internal error .*in a row failed"),  # its stderr
            "cut": (C.NETWORK, r"stream broke off \d times in a row"),  # the parser
            "nofinish": (C.NETWORK, r"without a finish reason \d times in a row"),  # the parser
            "dead": (C.NETWORK, r"Cannot connect to API.*in a row failed"),  # its stderr
        },
    ),
    "gemini": Cli(
        "gemini",
        _gemini,
        "gemini-2.5-flash",
        lambda home: home,  # GEMINI_CLI_HOME: the folder holding .gemini/
        {
            "401": (C.AUTH, r"401 mock invalid api key"),
            "429": (C.RATE_LIMIT, RESETS),
            "500": (C.WORKER_ERROR, r"500 mock internal error"),
            "cut": (C.WORKER_ERROR, r"stream was cut short"),
            "nofinish": (C.WORKER_ERROR, r"cut short \(Model stream ended without a finish"),
            "dead": (C.NETWORK, r"fetch failed"),
        },
    ),
    "pi": Cli(
        "pi",
        _pi,
        "mock/mock-model",
        lambda home: home / ".pi" / "agent",  # PI_CODING_AGENT_DIR
        {
            "401": (C.AUTH, r"401 mock invalid api key"),
            "429": (C.RATE_LIMIT, RESETS),
            "500": (C.WORKER_ERROR, r"500 mock internal error"),
            "cut": (C.WORKER_ERROR, r"stream broke off \(terminated\)"),
            "nofinish": (C.WORKER_ERROR, r"without a finish reason or token usage"),
            "dead": (C.NETWORK, r"Connection error"),
        },
    ),
}

FAILURES: dict[str, Turn] = {
    "401": Unauthorized(times=None),
    "429": RateLimit(times=None, retry_after=1, reset_in=3600),
    "500": ServerError(times=None),
    "cut": CutStream(times=None),
    "nofinish": NoFinish(times=None),
    "dead": Dead(),
}


def require(cli: str) -> Path:
    binary = agent_bin(cli)
    if not binary.exists():
        pytest.skip(
            f"!!! AGENT CLI '{cli}' IS NOT INSTALLED ({binary} missing): "
            "run scripts/install-agents before the agent tests !!!"
        )
    return binary


@dataclass
class Worker:
    """One profile of a real CLI bound to its own scripted model server."""

    profile: Profile
    srv: ModelServer


@asynccontextmanager
async def supervisor(
    cli: Cli,
    baton_home: Path,
    tmp_path: Path,
    scripts: dict[str, Script],
    stall_after: float = STALL_AFTER,
) -> AsyncIterator[tuple[Supervisor, dict[str, Worker], DenyAllProxy]]:
    """A Supervisor with one profile per script (``<cli>-<key>``), each on its own server."""
    require(cli.name)
    async with AsyncExitStack() as stack:
        proxy = stack.enter_context(DenyAllProxy())
        workers: dict[str, Worker] = {}
        for key, script in scripts.items():
            srv = stack.enter_context(ModelServer(script))
            home = tmp_path / f"home-{key}"
            home.mkdir()
            launch = cli.make(srv, home, proxy.url)
            config_dir = cli.config_dir(home)
            profile = Profile(
                name=f"{cli.name}-{key}",
                provider=cli.name,
                binary=launch.argv[0],
                model=cli.model,
                env=launch.env,
                config_dir=str(config_dir),
            )
            workers[key] = Worker(profile, srv)
        limits = Limits(stall_after=stall_after, wall_clock=90, kill_grace=1.0)
        sup = Supervisor(
            baton_home,
            profiles={w.profile.name: w.profile for w in workers.values()},
            limits=limits,
        )
        await sup.start()
        stack.push_async_callback(sup.close)
        yield sup, workers, proxy


async def settle(sup: Supervisor, task_id: str, timeout: float) -> TaskState:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = await sup.get(task_id)
        if task.state in SETTLED:
            return task.state
        await asyncio.sleep(0.05)
    raise AssertionError(f"task {task_id} still {(await sup.get(task_id)).state} after {timeout}s")


def only_local(workers: dict[str, Worker], proxy: DenyAllProxy) -> None:
    assert proxy.attempts == [], f"call-home attempts through the deny-all proxy: {proxy.attempts}"
    for w in workers.values():
        assert w.srv.errors == [], w.srv.errors
        for rec in w.srv.requests:
            assert rec.client[0] == "127.0.0.1"


def new_text(files: list[FileDiff]) -> str:
    return "".join(h.new_text for f in files for h in f.hunks)


# --- a task end to end: edit, review, reply in the same session, accept ---------------------


@pytest.mark.parametrize("name", list(CLIS))
async def test_task_edits_replies_in_the_same_session_and_accepts(
    name: str, baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    cli = CLIS[name]
    script = Script.of(
        write_file("hello.txt", "hello\n"),
        Answer("Wrote hello.txt."),
        write_file("hello.txt", "hello\nagain\n"),
        Answer("Added a line."),
    )
    async with supervisor(cli, baton_home, tmp_path, {"ok": script}) as (sup, workers, proxy):
        worker = workers["ok"]
        t0 = time.monotonic()
        req = DelegateRequest(
            instruction="Create hello.txt with a greeting.",
            root=str(repo),
            worker=worker.profile.name,
        )
        task = await sup.delegate(req)
        assert await settle(sup, task.id, 60) == S.REVIEW, (await sup.get(task.id)).message
        first = time.monotonic() - t0
        files, final = await sup.diff(task.id)
        assert final and [f.path for f in files] == ["hello.txt"]
        assert new_text(files) == "hello\n"
        assert not (repo / "hello.txt").exists()  # nothing reaches the user before accept
        done = await sup.get(task.id)
        session = done.session_id
        assert session and done.summary == "Wrote hello.txt."
        tools = [e for e in await sup.events(task.id) if e.type == EventType.TOOL]
        assert tools and tools[0].data["files"] == ["hello.txt"], tools

        # A reply resumes the SAME session; its edit lands in the same worktree.
        await sup.reply(task.id, "Add a second line saying again.")
        assert await settle(sup, task.id, 60) == S.REVIEW, (await sup.get(task.id)).message
        attempts = await sup.attempts(task.id)
        assert [a.reason for a in attempts] == ["first", "reply"]
        assert attempts[1].session_id == session == (await sup.get(task.id)).session_id
        # The CLI really resumed: the reply's first model request carries the first turn.
        reply_requests = [r for r in worker.srv.main_requests if r.turn == 2]
        assert reply_requests and "Wrote hello.txt." in json.dumps(reply_requests[0].body)
        files, _ = await sup.diff(task.id)
        assert new_text(files) == "hello\nagain\n"

        result = await sup.accept(task.id)
        assert result.applied and not result.conflicts
        assert (repo / "hello.txt").read_text() == "hello\nagain\n"
        assert (await sup.get(task.id)).state == S.APPLIED
        only_local(workers, proxy)
        total = time.monotonic() - t0
        print(f"\n{name}: first turn {first:.1f}s, both turns and accept {total:.1f}s")


# --- every failure of the model server, at once ----------------------------------------------


def failure_groups() -> list[tuple[str, str]]:
    """(cli, group): "stream" = failures the CLI reports, "silent" = those it retries quietly."""
    found = []
    for name, cli in CLIS.items():
        found.append((name, "stream"))
        if cli.silent:
            found.append((name, "silent"))
    return found


@pytest.mark.parametrize(("name", "group"), failure_groups())
async def test_each_failure_ends_in_its_completion_code_within_the_watchdog(
    name: str, group: str, baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    cli = CLIS[name]
    keys = [k for k in FAILURES if (k in cli.silent) == (group == "silent")]
    scripts = {key: Script.of(FAILURES[key]) for key in keys}
    stall = SILENT_STALL_AFTER if group == "silent" else STALL_AFTER
    async with supervisor(cli, baton_home, tmp_path, scripts, stall) as (sup, workers, proxy):
        t0 = time.monotonic()
        ids = {}
        for key, worker in workers.items():
            req = DelegateRequest(
                instruction="Create hello.txt with a greeting.",
                root=str(repo),
                worker=worker.profile.name,
            )
            ids[key] = (await sup.delegate(req)).id
        # Each must end within one idle period (plus the kill and some slack).
        states = await asyncio.gather(*(settle(sup, tid, stall + 15) for tid in ids.values()))
        elapsed = time.monotonic() - t0
        problems = []
        for (key, tid), state in zip(ids.items(), states, strict=True):
            task = await sup.get(tid)
            kind, pattern = cli.failures[key]
            want_state = S.RATE_LIMITED if kind == C.RATE_LIMIT else S.FAILED
            if state != want_state or task.completion != kind:
                problems.append(f"{key}: {state}/{task.completion} ({task.message!r})")
            elif not re.search(pattern, task.message):
                problems.append(f"{key}: message {task.message!r} !~ {pattern!r}")
            if kind == C.RATE_LIMIT:
                expected = time.time() + 3600
                if task.resets_at is None or abs(task.resets_at - expected) > 120:
                    problems.append(f"{key}: resets_at {task.resets_at} (want ~{expected:.0f})")
            if group == "silent":  # the CLI was really retrying when the watchdog ended it
                srv = workers[key].srv
                tried = [r for r in srv.main_requests if r.outcome in ("server_error", "dead")]
                if not tried and srv.dead_connections == 0:
                    problems.append(f"{key}: the model server never saw a request")
        assert not (repo / "hello.txt").exists()
        assert problems == [], "\n".join(problems)
        only_local(workers, proxy)
        print(f"\n{name} ({group}): {', '.join(keys)} judged in {elapsed:.1f}s")
