"""A tiny MCP server on stdio (standard library only) exposing one tool with a distinctive name.

Used by tests that check which MCP servers an agent CLI starts: the tool's name shows up in the
model request's tool definitions exactly when the CLI started this server. Each start is
appended to the file named by ``MCP_PROBE_LOG`` (when set), so a test can also see whether the
server was started at all.

    python mcp_probe_server.py [TOOL_NAME]
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

TOOL = sys.argv[1] if len(sys.argv) > 1 else "baton_probe_zebracorn"


def _answer(request_id: object, result: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


def _result(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion") or "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "baton-probe", "version": "1.0"},
        }
    if method == "tools/list":
        tool = {
            "name": TOOL,
            "description": "Say the probe's word (a test tool; never needed).",
            "inputSchema": {"type": "object", "properties": {}},
        }
        return {"tools": [tool]}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": "zebracorn"}], "isError": False}
    if method in ("ping", "resources/list", "prompts/list"):
        key = method.split("/")[0]
        return {} if method == "ping" else {key: []}
    return None


def main() -> None:
    log = os.environ.get("MCP_PROBE_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"started {TOOL}\n")
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message:
            continue  # a notification
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        result = _result(str(message.get("method")), params or {})
        if result is None:
            error = {"code": -32601, "message": f"no method {message.get('method')}"}
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": error}
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
        else:
            _answer(message["id"], result)


if __name__ == "__main__":
    main()
