"""What a lead agent reads through ``baton mcp``, in characters, for one small fake-agent task.

Prints the tool list's size (what the model reads of it with every request of the agent:
names, descriptions, input schemas as compact JSON; and the whole ``tools/list`` answer, output
schemas and hints too, which only the client reads), the server's instructions, then each
answer of delegate → watch (until it settles) → inspect → diff, and the sum of the first
three. The same script runs against any checkout (it drives ``baton mcp`` over stdio).

Beside the sum, what the same task is as a whole record (``baton inspect --detail all --json``
and ``baton diff --json``): the ratio is the share of it a lead agent reads through MCP (this
figure's "floor" is the reference it is cut from; lower is better, as for every ratio).

Run: .venv/bin/python benchmarks/mcp_answers.py [--tools delegate,watch,inspect,diff,accept]
[--quick]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from baton.surfaces.mcp.tools import size
from figures import fake_env, fake_repo, figure

APP = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"

SCRIPT = (
    "Do the scripted work\n\n```baton-fake\n"
    + json.dumps(
        {
            "steps": [
                {"say": "editing", "chunks": 2},
                {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
            ],
            "summary": "Changed a() to return 10.",
        }
    )
    + "\n```\n"
)


class Mcp:
    """``baton mcp`` over stdio, one JSON-RPC message a line."""

    def __init__(self, repo: Path, env: dict[str, str], extra: list[str]) -> None:
        argv = [sys.executable, "-m", "baton.cli", "mcp", "--cwd", str(repo), *extra]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        self.n = 0

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params or {}})
        assert self.proc.stdout is not None
        while True:
            msg = json.loads(self.proc.stdout.readline())
            if msg.get("id") == self.n:
                return msg["result"]

    def tool(self, name: str, **arguments: Any) -> str:
        res = self.request("tools/call", {"name": name, "arguments": arguments})
        return str(res["content"][0]["text"])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


def stop_brokers(run: Path) -> None:
    for found in run.glob("baton/broker-*.json"):
        pid = json.loads(found.read_text()).get("pid")
        if isinstance(pid, int) and psutil.pid_exists(pid):
            psutil.Process(pid).terminate()
    time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", help="offer only these tools (baton mcp --tools)")
    parser.add_argument("--quick", action="store_true", help="the same (it is quick already)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = fake_env(base) | {"GIT_CONFIG_NOSYSTEM": "1"}
        repo = fake_repo(base / "repo", {"app.py": APP})
        mcp = Mcp(repo, env, ["--tools", args.tools] if args.tools else [])
        try:
            init = mcp.request(
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"},
                },
            )
            mcp.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            tools = mcp.request("tools/list")["tools"]
            compact = len(json.dumps(tools, ensure_ascii=False, separators=(",", ":")))
            print(f"tool list: {len(tools)} tools, {size(tools):,} characters the model reads "
                  f"(name, description, input schema); {compact:,} on the wire")  # fmt: skip
            print(f"instructions: {len(init.get('instructions') or '')} characters")
            if args.tools and "delegate" not in args.tools.split(","):
                return
            answers = {"delegate": mcp.tool("delegate", instruction=SCRIPT)}
            tid = json.loads(answers["delegate"])["id"]
            answers["watch"] = mcp.tool("watch", ids=[tid], timeout=60)
            answers["inspect"] = mcp.tool("inspect", id=tid)
            answers["diff"] = mcp.tool("diff", id=tid)
            for name, text in answers.items():
                print(f"{name:<9} {len(text):>5}  {text.splitlines()[0][:100]}")
            three = sum(len(answers[k]) for k in ("delegate", "watch", "inspect"))
            print(f"delegate + watch + inspect: {three} characters")
            whole = 0
            for argv in (["inspect", tid, "--detail", "all"], ["diff", tid]):
                out = subprocess.run(
                    [sys.executable, "-m", "baton.cli", *argv, "--json"],
                    env=env, capture_output=True, text=True, check=True, timeout=60,
                )  # fmt: skip
                whole += len(out.stdout)
            figure(
                "delegate + watch + inspect, read by the lead agent",
                three,
                whole,
                "the whole record: baton inspect --detail all --json + baton diff --json",
                unit="characters",
                runs=1,
                stat="size",
                of="task",
            )
        finally:
            mcp.close()
            stop_brokers(base / "run")


if __name__ == "__main__":
    main()
