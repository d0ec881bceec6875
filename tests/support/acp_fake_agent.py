"""A deterministic ACP agent for tests: ``python tests/support/acp_fake_agent.py``.

It speaks raw JSON-RPC on stdio (one JSON object per line, as ACP does) and follows a script
of steps per prompt. The steps of a prompt come from a fenced block in the prompt itself::

    ```acp-fake
    [{"say": "hello"}, {"run": ["touch", "x"]}, {"edit": "a.txt", "content": "new\\n"}]
    ```

or else from the next turn of ``$ACP_FAKE_SCRIPT`` (a JSON list of step lists). Steps:

- ``{"say": text}``: message chunks (one per word)
- ``{"plan": [[text, status], ...]}``: a plan update
- ``{"run": argv, "title"?: str, "abort_on_reject"?: bool}``: ask permission (kind execute),
  then run ``argv`` in the cwd if allowed, or say that it was rejected (or, with
  ``abort_on_reject``, end the turn as ``cancelled``, as Codex does)
- ``{"edit": path, "content": text}``: ask permission (kind edit, with a diff), then write
  the file directly (as Claude, Codex and OpenCode do)
- ``{"fetch": url}``: ask permission (kind fetch)
- ``{"fs_write": path, "content": text}`` / ``{"fs_read": path}``: ask the client to write or
  read a file; says what came back (``refused: …`` on an error)
- ``{"sleep": seconds}``: wait (a cancel ends the turn as ``cancelled``)
- ``{"usage": {"used": n, "size": n, "cost": x}}``: a usage update
- ``{"tokens": [input, output]}``: usage in the prompt result
- ``{"stop": reason}``: end the turn with that stop reason
- ``{"fail": {"code": n, "message": text}}``: fail the prompt with a JSON-RPC error
- ``{"exit": code}``: die at once

With ``ACP_FAKE_STALE=1`` the agent copies the Claude adapter's bug: after a cancelled turn,
the next prompt in that session ends at once with ``end_turn``, no update and no tokens.
Every prompt is logged to ``$ACP_FAKE_LOG`` (JSON lines: session, text), if set.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

BLOCK = re.compile(r"```acp-fake\s*\n(.*?)\n```", re.S)
OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]


class Cancelled(Exception):
    pass


class FakeAgent:
    def __init__(self) -> None:
        self.writer: asyncio.StreamWriter | None = None
        self.next_id = 0
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        self.sessions: dict[str, dict[str, Any]] = {}
        self.cancelled: set[str] = set()
        self.turn = 0
        script = os.environ.get("ACP_FAKE_SCRIPT")
        self.script: list[list[dict[str, Any]]] = (
            json.loads(Path(script).read_text()) if script else []
        )

    # -- wire ----------------------------------------------------------------------------

    def send(self, obj: dict[str, Any]) -> None:
        assert self.writer is not None
        self.writer.write((json.dumps({"jsonrpc": "2.0", **obj}) + "\n").encode())

    def notify(self, session: str, update: dict[str, Any]) -> None:
        self.send({"method": "session/update", "params": {"sessionId": session, "update": update}})

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        rid = self.next_id
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiting[rid] = fut
        self.send({"id": rid, "method": method, "params": params})
        return await fut

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 24)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, sys.stdout
        )
        self.writer = asyncio.StreamWriter(transport, protocol, None, loop)
        tasks: set[asyncio.Task[None]] = set()
        while line := await reader.readline():
            msg = json.loads(line)
            if "method" not in msg:  # a response to one of our requests
                fut = self.waiting.pop(msg.get("id"), None)
                if fut is not None and not fut.done():
                    fut.set_result(msg)
                continue
            task = asyncio.create_task(self.dispatch(msg))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    async def dispatch(self, msg: dict[str, Any]) -> None:
        method, params, rid = msg["method"], msg.get("params") or {}, msg.get("id")
        try:
            result = await self.handle(method, params)
        except RpcError as exc:
            if rid is not None:
                self.send({"id": rid, "error": {"code": exc.code, "message": exc.message}})
            return
        if rid is not None:
            self.send({"id": rid, "result": result})

    async def handle(self, method: str, params: dict[str, Any]) -> Any:
        match method:
            case "initialize":
                return {
                    "protocolVersion": 1,
                    "agentCapabilities": {"loadSession": True},
                    "agentInfo": {"name": "acp-fake", "version": "1.0"},
                    "authMethods": [],
                }
            case "session/new":
                sid = f"fake-{uuid.uuid4().hex[:8]}"
                self.sessions[sid] = {"cwd": params["cwd"], "stale": False}
                return {"sessionId": sid}
            case "session/load":
                sid = params["sessionId"]
                if os.environ.get("ACP_FAKE_NO_LOAD"):
                    raise RpcError(-32002, f"unknown session {sid}")
                self.sessions[sid] = {"cwd": params["cwd"], "stale": False}
                return {}
            case "session/prompt":
                return await self.prompt(params["sessionId"], params["prompt"])
            case "session/cancel":
                self.cancelled.add(params["sessionId"])
                return None
            case _:
                raise RpcError(-32601, f"method not found: {method}")

    # -- turns ---------------------------------------------------------------------------

    async def prompt(self, sid: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
        session = self.sessions[sid]
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        log = os.environ.get("ACP_FAKE_LOG")
        if log:
            with open(log, "a") as f:
                f.write(json.dumps({"session": sid, "text": text}) + "\n")
        self.cancelled.discard(sid)
        if session["stale"]:
            session["stale"] = False
            return {"stopReason": "end_turn", "usage": {"inputTokens": 0, "outputTokens": 0}}
        found = BLOCK.search(text)
        if found:
            steps = json.loads(found.group(1))
        elif self.turn < len(self.script):
            steps = self.script[self.turn]
        else:
            steps = [{"say": "ok"}]
        self.turn += 1
        result: dict[str, Any] = {"stopReason": "end_turn"}
        try:
            for step in steps:
                stop = await self.step(sid, session["cwd"], step, result)
                if stop:
                    result["stopReason"] = stop
                    break
        except Cancelled:
            result = {"stopReason": "cancelled"}
        if result["stopReason"] == "cancelled" and os.environ.get("ACP_FAKE_STALE"):
            session["stale"] = True
        return result

    def check(self, sid: str) -> None:
        if sid in self.cancelled:
            raise Cancelled

    async def ask(self, sid: str, call: dict[str, Any]) -> str | None:
        reply = await self.request(
            "session/request_permission",
            {"sessionId": sid, "toolCall": call, "options": OPTIONS},
        )
        outcome = (reply.get("result") or {}).get("outcome") or {}
        self.check(sid)
        if outcome.get("outcome") != "selected":
            raise Cancelled
        return str(outcome.get("optionId"))

    async def step(
        self, sid: str, cwd: str, step: dict[str, Any], result: dict[str, Any]
    ) -> str | None:
        self.check(sid)
        call_id = f"call-{uuid.uuid4().hex[:6]}"
        if "say" in step:
            for word in str(step["say"]).split(" "):
                self.notify(sid, chunk(word + " "))
                await asyncio.sleep(0)
        elif "plan" in step:
            entries = [{"content": t, "status": s, "priority": "medium"} for t, s in step["plan"]]
            self.notify(sid, {"sessionUpdate": "plan", "entries": entries})
        elif "run" in step:
            argv = [str(a) for a in step["run"]]
            title = step.get("title") or " ".join(argv)
            call = {
                "toolCallId": call_id,
                "title": title,
                "kind": "execute",
                "status": "pending",
                "rawInput": {"command": argv},
            }
            self.notify(sid, {"sessionUpdate": "tool_call", **call})
            choice = await self.ask(sid, call)
            if choice in ("allow", "always"):
                done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
                self.notify(
                    sid,
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": call_id,
                        "status": "completed" if done.returncode == 0 else "failed",
                        "rawOutput": {"output": done.stdout + done.stderr},
                    },
                )
                self.notify(sid, chunk(f"Ran {title}. "))
            elif step.get("abort_on_reject"):  # as Codex's "abort": the turn ends
                return "cancelled"
            else:
                self.notify(
                    sid,
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": call_id,
                        "status": "failed",
                    },
                )
                self.notify(sid, chunk(f"The user rejected {title}. "))
        elif "edit" in step:
            path = Path(cwd) / str(step["edit"])
            old = path.read_text() if path.exists() else None
            call = {
                "toolCallId": call_id,
                "title": f"Edit {step['edit']}",
                "kind": "edit",
                "status": "pending",
                "locations": [{"path": str(path)}],
                "content": [
                    {"type": "diff", "path": str(path), "oldText": old, "newText": step["content"]}
                ],
            }
            self.notify(sid, {"sessionUpdate": "tool_call", **call})
            choice = await self.ask(sid, call)
            if choice in ("allow", "always"):
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(str(step["content"]))
                self.notify(
                    sid,
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": call_id,
                        "status": "completed",
                    },
                )
            else:
                self.notify(sid, chunk(f"The user rejected the edit of {step['edit']}. "))
        elif "fetch" in step:
            call = {
                "toolCallId": call_id,
                "title": f"Fetch {step['fetch']}",
                "kind": "fetch",
                "status": "pending",
                "rawInput": {"url": step["fetch"]},
            }
            choice = await self.ask(sid, call)
            self.notify(sid, chunk(f"fetch {'allowed' if choice == 'allow' else 'refused'}. "))
        elif "fs_write" in step or "fs_read" in step:
            raw = str(step.get("fs_write") or step.get("fs_read"))
            path = raw if os.path.isabs(raw) else str(Path(cwd) / raw)
            if "fs_write" in step:
                reply = await self.request(
                    "fs/write_text_file",
                    {"sessionId": sid, "path": path, "content": step.get("content", "")},
                )
            else:
                reply = await self.request("fs/read_text_file", {"sessionId": sid, "path": path})
            if "error" in reply:
                self.notify(sid, chunk(f"refused: {reply['error'].get('message')} "))
            else:
                content = (reply.get("result") or {}).get("content", "")
                self.notify(sid, chunk(f"fs ok {content!s}".strip() + " "))
        elif "sleep" in step:
            end = asyncio.get_running_loop().time() + float(step["sleep"])
            while asyncio.get_running_loop().time() < end:
                self.check(sid)
                await asyncio.sleep(0.02)
        elif "usage" in step:
            self.notify(sid, {"sessionUpdate": "usage_update", **step["usage"]})
        elif "tokens" in step:
            inp, out = step["tokens"]
            result["usage"] = {"inputTokens": inp, "outputTokens": out, "totalTokens": inp + out}
        elif "stop" in step:
            return str(step["stop"])
        elif "fail" in step:
            raise RpcError(int(step["fail"]["code"]), str(step["fail"]["message"]))
        elif "exit" in step:
            assert self.writer is not None
            await self.writer.drain()
            os._exit(int(step["exit"]))
        assert self.writer is not None
        await self.writer.drain()
        return None


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def chunk(text: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


def script(*steps: dict[str, Any]) -> str:
    """A prompt carrying ``steps`` for the fake ACP agent."""
    return "Do the scripted work\n\n```acp-fake\n" + json.dumps(list(steps)) + "\n```\n"


if __name__ == "__main__":
    asyncio.run(FakeAgent().serve())
