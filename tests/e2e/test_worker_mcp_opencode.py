"""A profile's ``worker_mcp`` with the real OpenCode: which MCP servers' tools reach the model.

The user's OpenCode config (``$XDG_CONFIG_HOME/opencode/opencode.json``) has one local MCP
server, the probe of tests/support/mcp_probe_server.py. With no ``worker_mcp`` its tool is in
the agent loop's tool definitions; with ``worker_mcp`` disabling it, none of it is (Baton turns
it off through ``OPENCODE_CONFIG_CONTENT``, over the profile's own content, which still names
the model provider); the servers in the user's file stay as they were.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from baton.config.profiles import Profile
from baton.core.lifecycle import TaskState
from tests.e2e.test_worker_claude import profile_from, require, world
from tests.e2e.test_worker_mcp_claude import PROBE, TOOL, tool_names
from tests.support.modelserver import Answer, ModelServer, Script, env_for_opencode

pytestmark = [pytest.mark.agents]

SERVER = "probe"


async def run_task(home: Path, repo: Path, tmp_path: Path, worker_mcp: dict[str, Any]) -> list[str]:
    """One task with a user config holding the probe server; the tools the model saw."""
    config_file: list[Path] = []

    def profile(srv: ModelServer, agent_home: Path, proxy: str) -> Profile:
        launch = env_for_opencode(srv, agent_home, proxy=proxy)
        path = agent_home / ".config" / "opencode" / "opencode.json"
        server = {"type": "local", "command": [sys.executable, str(PROBE), TOOL]}
        path.write_text(json.dumps({"mcp": {SERVER: server}}), encoding="utf-8")
        config_file.append(path)
        made = profile_from("opencode-test", "opencode", launch, agent_home / "oc-account")
        made.model = "mock/mock-model"
        made.worker_mcp = worker_mcp
        return made

    async with world(home, tmp_path, Script.of(Answer("Nothing to change.")), profile) as w:
        before = json.loads(config_file[0].read_text())["mcp"]
        task_id = await w.delegate(repo, "Say hello; change nothing.")
        state = await w.settle(task_id, timeout=90)
        assert state == TaskState.ANSWERED, (await w.sup.get(task_id)).message
        logs = [str(e.data.get("message")) for e in await w.sup.events(task_id)]
        if worker_mcp:
            assert any("worker_mcp for OpenCode: kept none; disabled probe" in m for m in logs)
        # OpenCode itself adds its "$schema" to the file; the servers in it stay as they were.
        assert json.loads(config_file[0].read_text())["mcp"] == before, config_file[0].read_text()
        w.only_local()
        return tool_names(w.srv)


async def test_user_server_reaches_the_model(baton_home: Path, repo: Path, tmp_path: Path) -> None:
    require("opencode")
    names = await run_task(baton_home, repo, tmp_path, {})
    assert [n for n in names if TOOL in n] == [f"{SERVER}_{TOOL}"], names


async def test_disabled_server_sends_no_tool(baton_home: Path, repo: Path, tmp_path: Path) -> None:
    require("opencode")
    names = await run_task(baton_home, repo, tmp_path, {"disable": [SERVER]})
    assert names and not [n for n in names if TOOL in n or n.startswith(f"{SERVER}_")], names
    assert "bash" in names  # the CLI's own tools are still there
