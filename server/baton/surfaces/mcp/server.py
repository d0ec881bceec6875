"""The MCP bridge: Baton's broker methods as MCP tools, over stdio.

``claude mcp add baton -- baton mcp`` (or a Codex ``[mcp_servers.baton]`` entry) lets a lead
agent delegate bounded work and get back a task id, then ``watch`` (blocks until the first of
its tasks settles), ``inspect``, ``diff``, ``accept``… Each tool call connects to the broker
serving the folder (starting one on demand) and answers with what the broker's websocket
method answers (see :mod:`baton.surfaces.ws.answers`): compact JSON, a task once, nulls left
out, long text cut with a marker saying how to get the rest. Every task carries ``next``.
The tool list is :mod:`baton.surfaces.mcp.tools`, trimmed by ``--tools``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from mcp.types import CallToolResult, TextContent
from mcp.types import Tool as MCPTool

import baton.surfaces.mcp.project as projects
from baton.surfaces.mcp.schemas import ACTIONS
from baton.surfaces.mcp.tools import INSTRUCTIONS, ToolSpec, chosen
from baton.surfaces.ws.client import (
    BrokerError,
    BrokerUnavailable,
    Client,
    broker_by_pid,
    connect_for,
)

try:  # mcp >= 2
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # pragma: no cover - mcp 1.x
    from mcp.server.fastmcp import (  # type: ignore[no-redef,attr-defined,unused-ignore]
        FastMCP as MCPServer,
    )
    from mcp.server.fastmcp.exceptions import (  # type: ignore[no-redef,import-not-found,unused-ignore]
        ToolError,
    )

log = logging.getLogger(__name__)

#: Seconds ``watch`` waits by default, and at most.
WATCH_DEFAULT, WATCH_MAX = 600.0, 3600.0


class Bridge:
    """Calls the broker for one folder, one connection per tool call."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    async def call(self, method: str, **params: Any) -> Any:
        own = method in ("delegate", "memory", "plan")  # the folder's broker
        client = await connect_for(self.folder, any_broker=not own)
        try:
            return await _call(client, method, **params)
        finally:
            await client.close()


async def _call(client: Client, method: str, **params: Any) -> Any:
    try:
        return await client.call(method, **params)
    except BrokerError as exc:
        pid = exc.data.get("brokerPid") if isinstance(exc.data, dict) else None
        other = broker_by_pid(pid) if isinstance(pid, int) else None
        if other is None:
            raise
    async with await Client.connect(other) as c2:
        return await c2.call(method, **params)


def _dump(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)


def _answer(obj: Any, text: str | None = None) -> CallToolResult:
    """What a tool answers: ``text`` (default: ``obj`` as compact JSON) for the agent to read,
    and ``obj`` as structured content (an object: a list goes under ``key``) for its client,
    as the tool's output schema describes it."""
    return CallToolResult(
        content=[TextContent(type="text", text=_dump(obj) if text is None else text)],
        structured_content=obj,
    )


class BatonMCP(MCPServer[Any]):
    """An MCP server whose ``tools/list`` is Baton's hand-kept lean definitions."""

    def __init__(self, specs: Sequence[ToolSpec]) -> None:
        super().__init__("baton", instructions=INSTRUCTIONS)
        self.specs = list(specs)

    async def list_tools(self) -> list[MCPTool]:
        return [MCPTool.model_validate(s.definition()) for s in self.specs]


def _handlers(folder: Path, bridge: Bridge) -> dict[str, Callable[..., Awaitable[CallToolResult]]]:
    """One coroutine per tool; each answers with the text the agent reads."""

    async def guarded(method: str, **params: Any) -> Any:
        try:
            return await bridge.call(method, **params)
        except BrokerError as exc:
            raise ToolError(exc.message) from None
        except BrokerUnavailable as exc:
            raise ToolError(str(exc)) from None

    async def delegate(
        instruction: str,
        cwd: str | None = None,
        worker: str | None = None,
        model: str | None = None,
        kind: str | None = None,
        scope: list[str] | None = None,
        files: list[str] | None = None,
        effort: str | None = None,
    ) -> CallToolResult:
        res = await guarded(
            "delegate",
            effort=effort,
            instruction=instruction,
            cwd=cwd or str(folder),
            worker=worker,
            model=model,
            kind=kind,
            scope=scope,
            targets=[{"path": f} for f in files] if files else None,
        )
        return _answer(res["task"])

    async def watch(ids: list[str], timeout: float = WATCH_DEFAULT) -> CallToolResult:
        res = await guarded("wait", ids=ids, timeout=max(0.0, min(timeout, WATCH_MAX)))
        return _answer(res.get("task", res))

    async def inspect(id: str, detail: str | list[str] | None = None) -> CallToolResult:
        return _answer(await guarded("inspect", id=id, detail=detail))

    async def diff(id: str, offset: int | None = None) -> CallToolResult:
        text = str((await guarded("diff", id=id, format="text", offset=offset))["text"])
        return _answer({"text": text}, text)

    async def accept(id: str, hunks: list[str] | None = None) -> CallToolResult:
        return _answer(await guarded("accept", id=id, hunks=hunks))

    async def reject(id: str, hunks: list[str] | None = None) -> CallToolResult:
        return _answer(await guarded("reject", id=id, hunks=hunks))

    async def task(
        id: str, action: str, text: str | None = None, worker: str | None = None
    ) -> CallToolResult:
        return _answer(await moved(guarded, id, action, text, worker))

    async def ask(question: str) -> CallToolResult:
        res = await guarded("ask", question=question, cwd=str(folder), timeout=ASK_WAIT)
        return _answer(res)

    async def tasks(
        state: list[str] | None = None, text: str | None = None, limit: int = 20
    ) -> CallToolResult:
        res = await guarded("tasks", state=state, text=text, limit=max(1, min(limit, 200)))
        return _answer(res, _dump(res["tasks"]))

    async def project(
        op: str,
        text: str | None = None,
        id: str | int | None = None,
        nodes: list[Any] | None = None,
        worker: str | None = None,
    ) -> CallToolResult:
        given = {"text": text, "id": id, "nodes": nodes, "worker": worker}
        try:
            res = await projects.project(guarded, folder, op, **given)
        except projects.ProjectError as exc:
            raise ToolError(str(exc)) from None
        return _answer(res, _dump(res["memory"]) if op == "memory" else None)

    async def workers() -> CallToolResult:
        return _answer(await guarded("workers"))

    return {
        "delegate": delegate,
        "watch": watch,
        "inspect": inspect,
        "diff": diff,
        "accept": accept,
        "reject": reject,
        "task": task,
        "ask": ask,
        "tasks": tasks,
        "project": project,
        "workers": workers,
    }


async def moved(
    call: Callable[..., Awaitable[Any]],
    task_id: str,
    action: str,
    text: str | None,
    worker: str | None,
) -> Any:
    """The ``task`` tool: ``action`` is the websocket method to call (``unarchive`` is
    ``archive`` with ``undo``); ``text`` is what that method takes as its text."""
    if action not in ACTIONS:
        raise ToolError(f"action: {action!r} is not one of: {', '.join(ACTIONS)}")
    needs = _TEXT_OF.get(action)
    if needs is None and text:
        raise ToolError(f"action {action} takes no text")
    if needs and needs[1] and not (text or "").strip():
        raise ToolError(f"action {action} needs text: {needs[1]}")
    if worker and action not in ("handoff", "edit"):
        raise ToolError(f"action {action} takes no worker")
    params: dict[str, Any] = {"id": task_id}
    if needs and text is not None:
        params[needs[0]] = text
    if worker:
        params["worker"] = worker
    if action in ("archive", "unarchive"):
        res = await call("archive", ids=[task_id], undo=action == "unarchive" or None)
        return res
    res = await call(action, **params)
    if action == "answer":
        return res["answered"]
    if action == "complete":
        return res
    return res["task"]


#: The ``task`` tool's actions that take ``text``: the parameter it becomes, and what it
#: must say when it is required ("" when it is optional).
_TEXT_OF: dict[str, tuple[str, str]] = {
    "reply": ("text", "the reply"),
    "steer": ("text", "the guidance"),
    "answer": ("option", "allow, reject or an option id"),
    "complete": ("evidence", "why the work is done"),
    "edit": ("instruction", ""),
}
#: Seconds ``ask`` waits for the answer; then it answers with the task (watch it).
ASK_WAIT = 600.0


def build(folder: Path, tools: str | Sequence[str] | None = None) -> BatonMCP:
    """The MCP server for ``folder`` offering ``tools`` (default: all; see ``chosen``)."""
    specs = chosen(tools)
    mcp = BatonMCP(specs)
    handlers = _handlers(folder, Bridge(folder))
    for spec in specs:
        mcp.tool(name=spec.name, description=spec.description, structured_output=False)(
            handlers[spec.name]
        )
    return mcp


def run(folder: Path, tools: str | None = None) -> int:
    """Serve MCP on stdio until the client goes away."""
    logging.basicConfig(level=logging.WARNING)
    build(folder, tools).run("stdio")
    return 0
