"""`baton claude`: find the editor's Baton IDE server for a folder and run the REAL Claude Code
CLI (interactive, in tmux) connected to it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from baton.surfaces.ide import start_ide_server
from tests.e2e.test_claude_ide import BOOT
from tests.e2e.test_worker_claude import require
from tests.support.claude_tui import (
    ClaudeTui,
    TuiLaunch,
    require_tmux,
    seed_claude_config,
    tui_launch,
)
from tests.support.ide_host import RecordingHost
from tests.support.modelserver import Answer, ModelServer, Script, agent_bin


def baton(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=30,
    )


async def test_finds_the_innermost_live_baton_ide_for_the_folder(repo: Path) -> None:
    (repo / "pkg").mkdir()
    outer = await start_ide_server(RecordingHost(), [repo.parent], ide_name="Baton (outer)")
    inner = await start_ide_server(RecordingHost(), [repo], ide_name="Baton (Neovim)")
    other = await start_ide_server(RecordingHost(), [repo], ide_name="Visual Studio Code")
    try:
        found = baton("claude", "--json", "--cwd", str(repo / "pkg"), cwd=repo)
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout)["port"] == inner.port
        plain = baton("claude", "--print-env", cwd=repo)
        assert plain.stdout.startswith(f"CLAUDE_CODE_SSE_PORT={inner.port}")
        await inner.close()
        again = baton("claude", "--json", cwd=repo)
        assert json.loads(again.stdout)["port"] == outer.port  # never another IDE's lock
    finally:
        for server in (outer, inner, other):
            await server.close()
    none = baton("claude", "--json", cwd=repo)
    assert none.returncode == 1
    assert "no editor with Baton serves" in json.loads(none.stdout)["error"]


@pytest.mark.agents
async def test_starts_claude_code_connected_to_the_editor(repo: Path, tmp_path: Path) -> None:
    require("claude")
    require_tmux()
    cfg = tmp_path / "claude-config"  # the CLAUDE_CONFIG_DIR tests/conftest.py set
    seed_claude_config(cfg, repo)
    server = await start_ide_server(RecordingHost(), [repo], ide_name="Baton (Neovim)")
    try:
        with ModelServer(Script.of(Answer("hello"))) as srv:
            plain = tui_launch(srv, tmp_path / "home", cfg)  # no port: `baton claude` finds it
            env = {**plain.env, "PATH": f"{agent_bin('claude').parent}:{plain.env['PATH']}"}
            argv = [sys.executable, "-m", "baton.cli", "claude", "--", *plain.argv[1:]]
            with ClaudeTui(TuiLaunch(argv, env), repo) as tui:
                client = await server.wait_for_client(BOOT)
                assert client.name == "claude-code"
                await tui.until("for shortcuts", BOOT)
    finally:
        await server.close()
