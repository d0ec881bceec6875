"""Codex as a real Baton worker: Supervisor → real CLI → scripted model server on 127.0.0.1.

Same checks as test_worker_claude.py (whose helpers this uses): a round trip with a reply that
resumes the same thread, a rate-limit hold, and each failure of the model server ending in the
right completion code within the watchdog time — including a server that refuses connections,
which Codex would retry forever: the parser's reconnect-loop detection stops it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.agents import codex
from baton.config.profiles import Profile
from baton.core.lifecycle import Completion
from tests.e2e.test_worker_claude import (
    ROUND_TRIP,
    STALL_AFTER,
    check_failure,
    check_rate_limit,
    check_round_trip,
    profile_from,
    require,
    world,
)
from tests.support.modelserver import (
    CutStream,
    Dead,
    ModelServer,
    NoFinish,
    RateLimit,
    Script,
    ServerError,
    Unauthorized,
    env_for_codex,
)

pytestmark = pytest.mark.agents


def codex_profile(srv: ModelServer, home: Path, proxy: str) -> Profile:
    # env_for_codex writes $CODEX_HOME/config.toml with the mock provider and no retries.
    launch = env_for_codex(srv, home, proxy=proxy, retries=0)
    return profile_from("codex-test", "codex", launch, home / ".codex", model="gpt-5.5")


FAILURES: dict[str, tuple[Script | None, Completion, str]] = {
    "401": (Script.of(Unauthorized(times=None)), Completion.AUTH, "401"),
    "500": (Script.of(ServerError(times=None)), Completion.WORKER_ERROR, "high demand"),
    "cut": (Script.of(CutStream(times=None)), Completion.NETWORK, "stream disconnected"),
    "nofinish": (Script.of(NoFinish(times=None)), Completion.NETWORK, "response.completed"),
    "dead": (Script.of(Dead()), Completion.NETWORK, "error sending request"),
}


async def test_codex_task_round_trip(baton_home: Path, repo: Path, tmp_path: Path) -> None:
    require("codex")
    async with world(baton_home, tmp_path, Script.of(*ROUND_TRIP), codex_profile) as w:
        await check_round_trip(w, repo, "Now also create second.txt.")


async def test_codex_rate_limit_holds(baton_home: Path, repo: Path, tmp_path: Path) -> None:
    """Codex drops the server's reset time: the hold uses the supervisor's default wait."""
    require("codex")
    async with world(baton_home, tmp_path, Script.of(RateLimit(times=None)), codex_profile) as w:
        await check_rate_limit(w, repo, None)


@pytest.mark.parametrize("failure", list(FAILURES))
async def test_codex_failure(baton_home: Path, repo: Path, tmp_path: Path, failure: str) -> None:
    require("codex")
    script, completion, words = FAILURES[failure]
    async with world(baton_home, tmp_path, script, codex_profile) as w:
        await check_failure(w, repo, completion, words)


async def test_codex_refused_connection_loop_is_stopped(
    baton_home: Path, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex prints 'Reconnecting... waiting for network' after 0, 5, 15, … s and never exits.

    The lines keep the idle watchdog quiet; the parser stops the loop (two lines here instead
    of three, to keep the test short) and the supervisor kills Codex: failed / network.
    """
    require("codex")
    monkeypatch.setattr(codex, "RECONNECT_LIMIT", 2)
    async with world(baton_home, tmp_path, None, codex_profile) as w:
        await check_failure(w, repo, Completion.NETWORK, "cannot reach the model server")
        assert STALL_AFTER > 10  # the stop came from the parser, not from the idle watchdog
