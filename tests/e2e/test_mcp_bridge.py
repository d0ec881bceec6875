"""`baton mcp` as an MCP client sees it: a real subprocess speaking MCP (JSON-RPC lines) on
stdio, a broker started on demand behind it, the real fake agent doing the work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import fake_script
from tests.e2e.test_cli import stop_brokers

EDIT = fake_script(
    {"say": "editing", "chunks": 2},
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    summary="Changed a() to return 10.",
)


class McpProcess:
    def __init__(self, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "baton.cli", "mcp", "--cwd", str(cwd)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        self.n = 0

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params or {}})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, f"baton mcp exited: {self.proc.stderr.read() if self.proc.stderr else ''}"
            msg = json.loads(line)
            if msg.get("id") == self.n:
                return dict(msg)

    def tool(self, name: str, **arguments: Any) -> tuple[str, bool]:
        res = self.request("tools/call", {"name": name, "arguments": arguments})
        assert "result" in res, res
        content = res["result"]["content"]
        return content[0]["text"], bool(res["result"].get("isError"))

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture
def mcp(baton_home: Path, repo: Path, tmp_path: Path) -> Iterator[McpProcess]:
    proc = McpProcess(repo)
    init = proc.request(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    )
    assert init["result"]["serverInfo"]["name"] == "baton"
    proc.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    try:
        yield proc
    finally:
        proc.close()
        stop_brokers(tmp_path / "run" / "baton")


def test_tools_delegate_watch_inspect_diff_accept(mcp: McpProcess, repo: Path) -> None:
    tools = {t["name"]: t for t in mcp.request("tools/list")["result"]["tools"]}
    for name in ("delegate", "watch", "inspect", "diff", "accept", "reject", "reply", "steer",
                 "cancel", "retry", "tasks", "memory", "workers", "health"):  # fmt: skip
        assert name in tools, name
    assert tools["delegate"]["inputSchema"]["required"] == ["instruction"]

    text, err = mcp.tool("delegate", instruction=EDIT)
    task = json.loads(text)
    assert not err and task["state"] == "queued" and task["next"] == ["watch", "cancel"]
    assert len(text) < 400  # an agent pays a few hundred characters for a delegation

    text, err = mcp.tool("watch", ids=[task["id"]], timeout=30)
    watched = json.loads(text)
    assert not err and watched["settled"]["state"] == "review", watched
    assert watched["settled"]["summary"] == "Changed a() to return 10."
    assert watched["settled"]["next"] == ["diff", "accept", "reject", "reply"]

    info = json.loads(mcp.tool("inspect", id=task["id"])[0])
    assert info["diff"]["files"] == ["app.py"] and info["diff"]["pending"] == 1
    assert info["attempts"][0]["completion"] == "completed"

    diff, _ = mcp.tool("diff", id=task["id"])
    assert "+    return 10" in diff and "@@ hunk " in diff

    steer, err = mcp.tool("steer", id=task["id"], text="go faster")
    assert err and "use reply" in steer and "next: diff, accept, reject, reply" in steer

    accepted = json.loads(mcp.tool("accept", id=task["id"])[0])
    assert accepted["task"]["state"] == "applied" and len(accepted["applied"]) == 1
    assert "return 10" in (repo / "app.py").read_text()

    unknown, err = mcp.tool("inspect", id="nosuchtask")
    assert err and "no task" in unknown


def test_memory_and_workers_tools(mcp: McpProcess, repo: Path) -> None:
    added = json.loads(mcp.tool("memory", op="add", text="Run make test before finishing.")[0])
    assert [m["text"] for m in added] == ["Run make test before finishing."]
    workers = json.loads(mcp.tool("workers")[0])
    assert "fake" in [w["name"] for w in workers["workers"]]
    health = json.loads(mcp.tool("health")[0])
    assert health["ok"] and health["roots"] == [str(repo)]
