"""A profile's ``worker_mcp`` with the real Claude Code: which MCP servers' tools reach the model.

The account's own config (``$CLAUDE_CONFIG_DIR/.claude.json``) has one stdio MCP server, a
tiny script exposing one tool with a distinctive name (tests/support/mcp_probe_server.py). The
scripted model server records each request: with no ``worker_mcp`` the agent loop's tool
definitions hold that tool (so the account's server is really started); with ``worker_mcp``
disabling it they hold none of it; with ``disable = "*"`` and a server added, only the added
one's. The account's servers in its config file stay as they were.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from baton.config.profiles import Profile
from baton.core.events import EventType
from baton.core.lifecycle import TaskState
from tests.e2e.test_worker_claude import claude_profile, require, world
from tests.support.modelserver import Answer, ModelServer, Script
from tests.support.modelserver.server import _Handler

#: The probe's script is wherever this repository is — under the temporary folder in a CI
#: clone, which the sandbox makes private: Baton shows the sandbox the files each MCP server
#: names (baton.agents.mcp_files), so it starts there too.
pytestmark = pytest.mark.agents

PROBE = Path(__file__).parent.parent / "support" / "mcp_probe_server.py"
SERVER = "probe"
TOOL = "baton_probe_zebracorn"
ADDED_TOOL = "baton_added_quokkafish"


def tool_names(srv: ModelServer) -> list[str]:
    """The tool names of the first agent-loop request the model server saw, read as the
    server's own dialect of that API reads them."""
    requests = srv.main_requests
    assert requests, "the model server saw no agent-loop request"
    first = requests[0]
    dialect = _Handler.dialects[first.api or "anthropic"]
    return [tool.name for tool in dialect.tools(first.body)]


async def run_task(
    home: Path,
    repo: Path,
    tmp_path: Path,
    worker_mcp: dict[str, Any],
    options: dict[str, Any] | None = None,
    logged: list[tuple[str, str]] | None = None,
) -> list[str]:
    """One task with an account whose config has the probe server; the tools the model saw
    (``logged`` gets the task's log as (level, message))."""
    config_file: list[Path] = []

    def profile(srv: ModelServer, agent_home: Path, proxy: str) -> Profile:
        made = claude_profile(srv, agent_home, proxy)
        account = Path(str(made.config_dir))
        account.mkdir(parents=True, exist_ok=True)
        server = {"type": "stdio", "command": sys.executable, "args": [str(PROBE), TOOL]}
        path = account / ".claude.json"
        path.write_text(json.dumps({"mcpServers": {SERVER: server}}), encoding="utf-8")
        config_file.append(path)
        made.worker_mcp = worker_mcp
        made.options = {**made.options, **(options or {})}
        return made

    async with world(home, tmp_path, Script.of(Answer("Nothing to change.")), profile) as w:
        before = json.loads(config_file[0].read_text())["mcpServers"]
        task_id = await w.delegate(repo, "Say hello; change nothing.")
        state = await w.settle(task_id)
        assert state == TaskState.ANSWERED, (await w.sup.get(task_id)).message
        events = [e for e in await w.sup.events(task_id) if e.type == EventType.LOG]
        logs = [str(e.data.get("message")) for e in events]
        if logged is not None:
            logged += [(str(e.data.get("level")), str(e.data.get("message"))) for e in events]
        if worker_mcp:
            assert any("worker_mcp for Claude Code" in m for m in logs), logs
        # Claude Code itself rewrites the file (its user id, …); its servers stay as they were.
        assert json.loads(config_file[0].read_text())["mcpServers"] == before
        w.only_local()
        return tool_names(w.srv)


def probe_tools(names: list[str], tool: str) -> list[str]:
    return [n for n in names if tool in n]


async def test_account_server_reaches_the_model(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    require("claude")
    names = await run_task(baton_home, repo, tmp_path, {})
    assert probe_tools(names, TOOL) == [f"mcp__{SERVER}__{TOOL}"], names


async def test_disabled_server_sends_no_tool(baton_home: Path, repo: Path, tmp_path: Path) -> None:
    require("claude")
    names = await run_task(baton_home, repo, tmp_path, {"disable": [SERVER]})
    assert names, "the agent loop offered no tools at all"
    assert probe_tools(names, TOOL) == [] and not [n for n in names if n.startswith("mcp__")]
    assert "Bash" in names  # the CLI's own tools are still there


async def test_all_disabled_and_one_added(baton_home: Path, repo: Path, tmp_path: Path) -> None:
    require("claude")
    added = {"extra": {"command": sys.executable, "args": [str(PROBE), ADDED_TOOL], "env": {}}}
    names = await run_task(baton_home, repo, tmp_path, {"disable": ["*"], "add": added})
    assert probe_tools(names, TOOL) == []
    assert [n for n in names if n.startswith("mcp__")] == [f"mcp__extra__{ADDED_TOOL}"], names


async def test_a_server_that_cannot_start_is_a_warning(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    """A server whose command does not exist: the task runs, its log says at warning level
    which server will not start and why; the other servers still reach the model."""
    require("claude")
    added = {"broken": {"command": str(tmp_path / "no-such-server"), "args": [], "env": {}}}
    logged: list[tuple[str, str]] = []
    names = await run_task(baton_home, repo, tmp_path, {"add": added}, logged=logged)
    assert probe_tools(names, TOOL) == [f"mcp__{SERVER}__{TOOL}"], names
    warned = [m for level, m in logged if level == "warning"]
    assert any(
        "warning: MCP server broken will not start: its command" in m and "does not exist" in m
        for m in warned
    ), logged
    assert not any("MCP server" in m for level, m in logged if level != "warning"), logged


async def test_a_log_the_server_writes_under_tmp_needs_options_sandbox_write(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    """The added probe writes its start to a log in a fresh folder of the private /tmp: without
    that folder in the profile's ``options.sandbox.write`` the write fails, the probe dies and
    its tool is missing — which the task's log says, at warning level, beforehand; with it,
    the probe starts and its log is written."""
    require("claude")
    logs = tmp_path / "mcp-logs"
    logs.mkdir()
    log = logs / "probe.log"
    env = {"MCP_PROBE_LOG": str(log)}
    added = {"extra": {"command": sys.executable, "args": [str(PROBE), ADDED_TOOL], "env": env}}
    plan = {"disable": ["*"], "add": added}
    logged: list[tuple[str, str]] = []
    names = await run_task(baton_home, repo, tmp_path, plan, logged=logged)
    assert [n for n in names if n.startswith("mcp__")] == [], names
    assert not log.exists()
    assert any(level == "warning" and f"MCP server extra names {log}" in m for level, m in logged)

    (tmp_path / "again").mkdir()
    names = await run_task(
        baton_home, repo, tmp_path / "again", plan, options={"sandbox": {"write": [str(logs)]}}
    )
    assert [n for n in names if n.startswith("mcp__")] == [f"mcp__extra__{ADDED_TOOL}"], names
    assert log.read_text() == f"started {ADDED_TOOL}\n"
