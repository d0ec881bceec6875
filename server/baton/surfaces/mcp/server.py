"""The MCP bridge: Baton's broker methods as MCP tools, over stdio.

``claude mcp add baton -- baton mcp`` (or a Codex ``[mcp_servers.baton]`` entry) lets a lead
agent delegate bounded work and get back a task id, then ``watch`` (blocks until the task
settles), ``inspect``, ``diff``, ``accept``… Each tool call connects to the broker serving
the folder (starting one on demand) and answers with compact JSON, a few hundred characters,
so delegating costs the lead agent little context. Every task in an answer carries ``next``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from baton.surfaces.ws.client import (
    BrokerError,
    BrokerUnavailable,
    Client,
    broker_by_pid,
    connect_for,
    events_until,
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

STOP = frozenset(
    {"review", "needs_input", "applied", "rejected", "answered", "failed", "cancelled"}
    | {"interrupted"}
)
INSTRUCTIONS = (
    "Baton runs coding tasks in the background, each in an isolated git worktree, with the "
    "agent CLIs configured here (see `workers`). `delegate` returns a task id at once; "
    "`watch` waits until a task settles; `inspect` and `diff` show the result; `accept` or "
    "`reject` apply or drop its hunks; `reply` answers a question or asks for changes. "
    "Every task carries `next`: the moves that make sense now."
)


class Bridge:
    """Calls the broker for one folder, one connection per tool call."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    async def call(self, method: str, **params: Any) -> Any:
        client = await connect_for(self.folder, any_broker=method not in ("delegate", "memory"))
        try:
            return await _call(client, method, **params)
        finally:
            await client.close()

    async def watch(self, ids: list[str], timeout: float) -> dict[str, Any]:
        client = await connect_for(self.folder, any_broker=True)
        try:
            _, ready = await events_until(
                client, ids, lambda s: s in STOP, lambda e, h: None, timeout
            )
            tasks = [(await _call(client, "get", id=i))["task"] for i in ids]
        finally:
            await client.close()
        out: dict[str, Any] = {"tasks": [_brief(t) for t in tasks]}
        if ready is None:
            out["timeout"] = f"nothing settled within {timeout:g} s; watch again"
        else:
            done = next((t for t in tasks if t["id"] == ready), tasks[0])
            out["settled"] = _brief(done)
            if done.get("summary"):
                out["settled"]["summary"] = done["summary"][:2000]
        return out


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


def _brief(task: dict[str, Any]) -> dict[str, Any]:
    keep = ("id", "state", "title", "worker", "completion", "message", "next")
    return {k: task[k] for k in keep if task.get(k) not in (None, "")}


def _dump(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)


def _diff_text(res: dict[str, Any], limit: int = 20_000) -> str:
    """A task's diff as unified-style text with hunk ids (what an agent reads)."""
    task, kind = res["task"], "final" if res["final"] else "draft"
    lines = [f"task {task['id']} ({task['state']}), {kind} diff"]
    for f in res["files"]:
        lines.append(f"--- {f.get('oldPath') or f['path']}\n+++ {f['path']} ({f['status']})")
        for h in f["hunks"]:
            lines.append(
                f"@@ hunk {h['id']} [{h.get('state', 'pending')}] "
                f"-{h.get('oldStart', 0)},{h.get('oldCount', 0)} "
                f"+{h.get('newStart', 0)},{h.get('newCount', 0)} @@"
            )
            lines += ["-" + x for x in str(h.get("oldText", "")).splitlines()]
            lines += ["+" + x for x in str(h.get("newText", "")).splitlines()]
    lines.append("next: " + ", ".join(task["next"]))
    text = "\n".join(lines)
    return text if len(text) <= limit else text[:limit] + "\n… (cut; use the CLI for the rest)"


def build(folder: Path) -> MCPServer[Any]:
    """The MCP server with Baton's tools for ``folder``."""
    bridge = Bridge(folder)
    mcp = MCPServer("baton", instructions=INSTRUCTIONS)

    async def guarded(method: str, **params: Any) -> Any:
        try:
            return await bridge.call(method, **params)
        except BrokerError as exc:
            raise ToolError(exc.message) from None
        except BrokerUnavailable as exc:
            raise ToolError(str(exc)) from None

    @mcp.tool(structured_output=False)
    async def delegate(
        instruction: str,
        cwd: str | None = None,
        worker: str | None = None,
        model: str | None = None,
        kind: str | None = None,
        scope: list[str] | None = None,
        files: list[str] | None = None,
    ) -> str:
        """Hand a bounded coding task to a background worker; returns its id at once.

        The worker runs in an isolated git worktree of `cwd` (default: this project); its
        change comes back as a diff to accept or reject. `scope` limits writes (globs);
        `files` names the files the task is about. Then call `watch` with the id.
        """
        targets = [{"path": f} for f in files] if files else None
        res = await guarded(
            "delegate",
            instruction=instruction,
            cwd=cwd or str(folder),
            worker=worker,
            model=model,
            kind=kind,
            scope=scope,
            targets=targets,
        )
        return _dump(res["task"])

    @mcp.tool(structured_output=False)
    async def watch(ids: list[str], timeout: float = 600.0) -> str:
        """Wait until one of the tasks settles (review, answered, needs_input, failed, …)
        or the timeout passes; returns their states, the settled one's summary and `next`."""
        try:
            res = await bridge.watch(ids, max(0.0, min(timeout, 3600.0)))
        except (BrokerError, BrokerUnavailable) as exc:
            raise ToolError(str(exc)) from None
        return _dump(res)

    @mcp.tool(structured_output=False)
    async def inspect(id: str) -> str:
        """A task's state, why it settled, the worker's summary, attempts and diff stats."""
        res = await guarded("inspect", id=id, events=0)
        task = res["task"]
        out = _brief(task)
        if task.get("summary"):
            out["summary"] = task["summary"][:4000]
        out["attempts"] = [
            {k: a.get(k) for k in ("n", "reason", "worker", "model", "completion", "exit_code")}
            for a in res["attempts"]
        ]
        d = res["diff"]
        out["diff"] = {k: d[k] for k in ("final", "hunks", "pending", "added", "removed")}
        out["diff"]["files"] = [f["path"] for f in d["files"]]
        return _dump(out)

    @mcp.tool(structured_output=False)
    async def diff(id: str) -> str:
        """The task's change as unified-diff text, each hunk with its id (for accept/reject)."""
        return _diff_text(await guarded("diff", id=id))

    @mcp.tool(structured_output=False)
    async def tasks(
        state: list[str] | None = None, text: str | None = None, limit: int = 20
    ) -> str:
        """Recent tasks, newest first; filter by state(s) or full-text search."""
        res = await guarded("tasks", state=state, text=text, limit=max(1, min(limit, 200)))
        return _dump([_brief(t) for t in res["tasks"]])

    @mcp.tool(structured_output=False)
    async def accept(id: str, hunks: list[str] | None = None) -> str:
        """Apply the task's pending hunks (or the named ones) to the project's files."""
        res = await guarded("accept", id=id, hunks=hunks)
        res["task"] = _brief(res["task"])
        return _dump(res)

    @mcp.tool(structured_output=False)
    async def reject(id: str, hunks: list[str] | None = None) -> str:
        """Drop the task's pending hunks (or the named ones)."""
        res = await guarded("reject", id=id, hunks=hunks)
        res["task"] = _brief(res["task"])
        return _dump(res)

    @mcp.tool(structured_output=False)
    async def reply(id: str, text: str) -> str:
        """Answer a task's question (needs_input), or ask a task in review for changes."""
        return _dump((await guarded("reply", id=id, text=text))["task"])

    @mcp.tool(structured_output=False)
    async def steer(id: str, text: str) -> str:
        """Interrupt a running task and continue its session with new guidance."""
        return _dump((await guarded("steer", id=id, text=text))["task"])

    @mcp.tool(structured_output=False)
    async def cancel(id: str) -> str:
        """Cancel a task (stops its agent)."""
        return _dump((await guarded("cancel", id=id))["task"])

    @mcp.tool(structured_output=False)
    async def retry(id: str) -> str:
        """Run a failed, cancelled or interrupted task again."""
        return _dump((await guarded("retry", id=id))["task"])

    @mcp.tool(structured_output=False)
    async def memory(op: str = "list", text: str | None = None, id: int | None = None) -> str:
        """Durable facts about this project that go into every brief: list, add, remove."""
        res = await guarded("memory", op=op, text=text, id=id, root=str(folder))
        return _dump(res["memory"])

    @mcp.tool(structured_output=False)
    async def workers() -> str:
        """The workers (agent CLI profiles) tasks can be delegated to, and their models."""
        return _dump(await guarded("workers"))

    @mcp.tool(structured_output=False)
    async def health() -> str:
        """Is the broker up; its version, folders and task counts."""
        return _dump(await guarded("health"))

    return mcp


def run(folder: Path) -> int:
    """Serve MCP on stdio until the client goes away."""
    logging.basicConfig(level=logging.WARNING)
    build(folder).run("stdio")
    return 0
