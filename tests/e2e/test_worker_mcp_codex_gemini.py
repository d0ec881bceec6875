"""A profile's ``worker_mcp`` with the real Codex and Gemini CLI (see test_worker_mcp_claude.py).

Each CLI's own config gets the probe MCP server (Codex: ``mcp_servers`` in
``$CODEX_HOME/config.toml``; Gemini: ``mcpServers`` in the account's ``.gemini/settings.json``),
which notes each start in a log file. Without ``worker_mcp`` the probe is started (and, for
Gemini, its tool is among the model request's tool definitions; Codex 0.171 keeps MCP tools
behind its ``tool_search`` tool instead of sending their definitions); with
``worker_mcp.disable`` naming it, it is not started and none of its tools is sent; with
``disable = "*"`` and a server added, only the added one is. The CLI's config file is unchanged.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from baton.config.profiles import Profile
from baton.core.lifecycle import TaskState
from tests.e2e.test_worker_claude import profile_from, require, world
from tests.e2e.test_worker_mcp_claude import (
    ADDED_TOOL,
    PROBE,
    TOOL,
    tool_names,
)
from tests.support.modelserver import Answer, ModelServer, Script, env_for_codex, env_for_gemini

pytestmark = [pytest.mark.agents]

SERVER = "probe"


def probe(tool: str, log: Path) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": [str(PROBE), tool],
        "env": {"MCP_PROBE_LOG": str(log)},
    }


def codex(srv: ModelServer, home: Path, proxy: str) -> tuple[Profile, Path, Path]:
    launch = env_for_codex(srv, home, proxy=proxy, retries=0)
    config = home / ".codex" / "config.toml"
    log = home / ".codex" / "probe.log"  # inside CODEX_HOME: writable in the sandbox
    server = probe(TOOL, log)
    table = (
        f"\n[mcp_servers.{SERVER}]\ncommand = {json.dumps(server['command'])}\n"
        f"args = {json.dumps(server['args'])}\nenv = {{ MCP_PROBE_LOG = {json.dumps(str(log))} }}\n"
    )
    config.write_text(config.read_text() + table)
    profile = profile_from("codex-test", "codex", launch, home / ".codex", model="gpt-5.5")
    return profile, config, log


def gemini(srv: ModelServer, home: Path, proxy: str) -> tuple[Profile, Path, Path]:
    launch = env_for_gemini(srv, home, proxy=proxy, max_attempts=2)
    path = home / ".gemini" / "settings.json"
    log = home / ".gemini" / "probe.log"  # inside the account's .gemini: writable
    settings = json.loads(path.read_text())
    settings["mcpServers"] = {SERVER: probe(TOOL, log)}
    path.write_text(json.dumps(settings, indent=2))
    profile = profile_from("gemini-test", "gemini", launch, home, model="gemini-2.5-flash")
    return profile, path, log


CLIS: dict[str, Callable[[ModelServer, Path, str], tuple[Profile, Path, Path]]] = {
    "codex": codex,
    "gemini": gemini,
}


async def run_task(
    cli: str, home: Path, repo: Path, tmp_path: Path, worker_mcp: Callable[[Path], dict[str, Any]]
) -> tuple[list[str], str]:
    """One task with the CLI's config holding the probe server: the tools the model saw, and
    the probe's start log."""
    made: list[tuple[Path, Path]] = []

    def profile(srv: ModelServer, agent_home: Path, proxy: str) -> Profile:
        profile, config, log = CLIS[cli](srv, agent_home, proxy)
        made.append((config, log))
        profile.worker_mcp = worker_mcp(log)
        return profile

    async with world(home, tmp_path, Script.of(Answer("Nothing to change.")), profile) as w:
        config, log = made[0]
        before = config.read_bytes()
        task_id = await w.delegate(repo, "Say hello; change nothing.")
        state = await w.settle(task_id, timeout=90)
        assert state == TaskState.ANSWERED, (await w.sup.get(task_id)).message
        logs = [str(e.data.get("message")) for e in await w.sup.events(task_id)]
        if worker_mcp(log):
            assert any("worker_mcp for " in m for m in logs), logs
        assert config.read_bytes() == before
        w.only_local()
        started = log.read_text() if log.exists() else ""
        return tool_names(w.srv), started


def probe_tools(names: list[str], tool: str) -> list[str]:
    return [n for n in names if tool in n]


@pytest.mark.parametrize("cli", list(CLIS))
async def test_own_server_is_started(
    baton_home: Path, repo: Path, tmp_path: Path, cli: str
) -> None:
    require(cli)
    names, started = await run_task(cli, baton_home, repo, tmp_path, lambda log: {})
    assert f"started {TOOL}" in started
    if cli == "gemini":
        assert len(probe_tools(names, TOOL)) == 1, names


@pytest.mark.parametrize("cli", list(CLIS))
async def test_disabled_server_is_not(
    baton_home: Path, repo: Path, tmp_path: Path, cli: str
) -> None:
    require(cli)
    names, started = await run_task(
        cli, baton_home, repo, tmp_path, lambda log: {"disable": [SERVER]}
    )
    assert names and probe_tools(names, TOOL) == [], names
    assert started == ""


@pytest.mark.parametrize("cli", list(CLIS))
async def test_all_disabled_and_one_added(
    baton_home: Path, repo: Path, tmp_path: Path, cli: str
) -> None:
    require(cli)

    def plan(log: Path) -> dict[str, Any]:
        return {"disable": ["*"], "add": {"extra": probe(ADDED_TOOL, log)}}

    names, started = await run_task(cli, baton_home, repo, tmp_path, plan)
    assert probe_tools(names, TOOL) == []
    assert started.splitlines() == [f"started {ADDED_TOOL}"]
    if cli == "gemini":
        assert len(probe_tools(names, ADDED_TOOL)) == 1, names
