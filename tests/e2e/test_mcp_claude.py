"""The real Claude Code CLI as the lead agent, configured with `baton mcp`: against the scripted
model server it calls Baton's delegate tool, then watch and inspect, and receives the result —
and what that costs it: the model server records each request, so the test measures the tool
definitions and instructions Baton adds to every request, and what Baton's answers add.

The delegated work runs on Baton's fake agent (in a broker started on demand behind the MCP
bridge); Claude itself talks only to the model server on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

import baton
from baton.surfaces.mcp.tools import INSTRUCTIONS, TOOLS, model_view, size
from tests.conftest import fake_script
from tests.e2e.test_cli import stop_brokers
from tests.e2e.test_mcp_bridge import CLAUDE_RENAMING, ROWS, doc_sizes
from tests.e2e.test_worker_claude import require
from tests.support.modelserver import (
    Answer,
    CallContext,
    DenyAllProxy,
    ModelServer,
    RecordedRequest,
    Script,
    ToolCall,
    env_for_claude,
)

pytestmark = pytest.mark.agents

WORK = fake_script(
    {"say": "editing", "chunks": 2},
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    summary="Changed a() to return 10.",
)
TASK_ID = re.compile(r'\\*"id\\*"\s*:\s*\\*"([0-9a-z]{11})\\*"')


def task_id_from(ctx: CallContext) -> str:
    """The id the delegate tool returned, as Claude sent it back in the conversation."""
    found = TASK_ID.findall(json.dumps(ctx.body))
    if not found:
        raise LookupError("no task id in the conversation yet")
    return str(found[-1])


def compact(obj: Any) -> int:
    return len(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))


def baton_share(req: RecordedRequest) -> dict[str, int]:
    """What Baton adds to one request: its tool definitions, its instructions (Claude Code puts
    them in a reminder of the first message) and its tool results so far, in characters."""
    body = req.body
    tools = [t for t in body["tools"] if str(t["name"]).startswith("mcp__baton__")]
    # A result's content is a string (a tool with structured content: Claude Code passes on
    # that JSON) or a list of text parts.
    results = [
        part if isinstance(part, str) else part["text"]
        for m in body["messages"]
        if isinstance(m["content"], list)
        for block in m["content"]
        if block.get("type") == "tool_result"
        for part in (
            [block["content"]]
            if isinstance(block.get("content"), str)
            else block.get("content") or []
        )
        if isinstance(part, str) or part.get("type") == "text"
    ]
    return {
        "request": req.size,
        "tools": len(tools),
        "definitions": compact(tools),
        "instructions": len(INSTRUCTIONS) if INSTRUCTIONS in json.dumps(body) else 0,
        "answers": sum(len(r) for r in results),
    }


def test_claude_delegates_through_baton_mcp(baton_home: Path, repo: Path, tmp_path: Path) -> None:
    require("claude")
    agent_home = tmp_path / "agent-home"
    script = Script.of(
        ToolCall(("mcp__baton__delegate",), {"instruction": WORK}),
        ToolCall(("mcp__baton__watch",), lambda ctx: {"ids": [task_id_from(ctx)], "timeout": 60}),
        ToolCall(("mcp__baton__inspect",), lambda ctx: {"id": task_id_from(ctx)}),
        Answer("Baton finished the task; it is ready for review."),
    )
    with DenyAllProxy() as proxy, ModelServer(script) as srv:
        launch = env_for_claude(srv, agent_home, proxy=proxy.url, max_retries=0)
        config = tmp_path / "mcp.json"
        server = {
            "command": sys.executable,
            "args": ["-m", "baton.cli", "mcp", "--cwd", str(repo)],
            "env": {
                "BATON_HOME": str(baton_home),
                "BATON_CONFIG": os.environ["BATON_CONFIG"],  # the fake agent as the default
                "XDG_RUNTIME_DIR": str(tmp_path / "run"),
                "GIT_CONFIG_NOSYSTEM": "1",
                # The Baton under test, whichever checkout the interpreter would import.
                "PYTHONPATH": str(Path(baton.__file__).parents[1]),
            },
        }
        config.write_text(json.dumps({"mcpServers": {"baton": server}}))
        argv = [
            *launch.argv[:-1],
            "--mcp-config",
            str(config),
            "--strict-mcp-config",
            "--allowedTools",
            "mcp__baton",
            "-p",
        ]
        launch.argv = argv
        # Connect MCP servers before the first model request (else they join later).
        launch.env["MCP_CONNECTION_NONBLOCKING"] = "0"
        try:
            run = launch.run("Delegate the change to Baton and report back.", repo, timeout=120)
        finally:
            stop_brokers(tmp_path / "run" / "baton")
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        lines = [json.loads(x) for x in run.stdout.splitlines() if x.startswith("{")]
        assert lines[-1]["type"] == "result" and "ready for review" in lines[-1]["result"]
        # What Claude's tools received from Baton, as it sent them back to the model.
        requests = srv.main_requests
        assert len(requests) == 4, [r.path for r in requests]
        final = json.dumps(requests[-1].body)
        assert "Changed a() to return 10." in final and '\\"settled\\"' not in final
        assert '\\"state\\":\\"review\\"' in final
        assert "app.py +1 -1, 1 hunk pending" in final
        assert proxy.attempts == []
        # What Baton costs the lead agent, request by request (run with -s to see it).
        shares = [baton_share(r) for r in requests]
        for n, share in enumerate(shares, 1):
            print(f"request {n}: " + ", ".join(f"{k} {v:,}" for k, v in share.items()))
        # Claude Code hands the model each definition's name (as mcp__baton__*), description
        # and input schema, as they are, and nothing else of the tools/list answer (no output
        # schema, no hints): what tools.size counts, plus the renaming.
        sent = {
            t["name"]: t for t in requests[0].body["tools"] if t["name"].startswith("mcp__baton__")
        }
        assert sent == {
            f"mcp__baton__{t.name}": {
                "name": f"mcp__baton__{t.name}",
                "description": t.description,
                "input_schema": model_view(t.definition())["inputSchema"],
            }
            for t in TOOLS.values()
        }
        listed = size(t.definition() for t in TOOLS.values())
        renamed = listed + len(TOOLS) * CLAUDE_RENAMING
        print(f"tool definitions: {listed:,} listed, {renamed:,} in each request")
        # The bound on the tool list (3,000), as Claude Code spells it.
        bound = 3_000 + len(TOOLS) * CLAUDE_RENAMING
        for share in shares:
            assert share["tools"] == len(TOOLS) and share["instructions"] == len(INSTRUCTIONS)
            assert share["definitions"] == renamed <= bound, (share, bound)
        assert shares[-1]["answers"] <= 400, shares[-1]  # delegate + watch + inspect
        # docs/reference/mcp.md states what this session measured.
        stated = doc_sizes()
        assert stated[ROWS["claude"]] == shares[0]["definitions"]
        assert stated[ROWS["three"]] == shares[-1]["answers"]
    # The work happened in Baton, and waits for review there.
    assert "return 1\n" in (repo / "app.py").read_text()
