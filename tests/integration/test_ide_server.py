"""Baton's Claude Code IDE server through a real websocket client on 127.0.0.1: the upgrade's
security checks, the MCP subset, openDiff blocking until a scripted host decides, tabs closed
by the CLI, by a second diff, by a disconnect or a shutdown, and the lock file."""

from __future__ import annotations

import asyncio
import json
import os
import random
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from baton.surfaces.ide import (
    ClosedBy,
    Diagnostic,
    DiffDecision,
    DiffRequest,
    DiffUnavailable,
    FileDiagnostics,
    IdeHost,
    IdeLimits,
    IdeServer,
    OpenEditor,
    Position,
    Selection,
    claude_config_dir,
    claude_env,
    lockfile,
    start_ide_server,
)
from baton.surfaces.ide.server import TOKEN_HEADER
from baton.surfaces.ide.tools import TOOL_NAMES
from tests.support.ide_host import RecordingHost

REPO = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- the rig


class Mcp:
    """A raw JSON-RPC client over one websocket: requests may be answered out of order."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.n = 0
        self.answers: dict[Any, dict[str, Any]] = {}
        self.others: list[dict[str, Any]] = []  # notifications and id-less answers

    async def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        self.n += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self.n, "method": method}
        if params is not None:
            msg["params"] = params
        await self.ws.send(json.dumps(msg))
        return self.n

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self.ws.send(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}))

    async def _read(self, timeout: float) -> None:
        msg = json.loads(await asyncio.wait_for(self.ws.recv(), timeout))
        if msg.get("id") is not None:
            self.answers[msg["id"]] = msg
        else:
            self.others.append(msg)

    async def answer(self, rid: Any, timeout: float = 5.0) -> dict[str, Any]:
        while rid not in self.answers:
            await self._read(timeout)
        return self.answers.pop(rid)

    async def unanswered(self, rid: Any, wait: float = 0.3) -> bool:
        """True when `rid` got no answer within `wait` seconds."""
        try:
            async with asyncio.timeout(wait):
                while rid not in self.answers:
                    await self._read(wait)
        except TimeoutError:
            return True
        return False

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self.answer(await self.send(method, params))

    async def tool(self, name: str, **args: Any) -> dict[str, Any]:
        return await self.call("tools/call", {"name": name, "arguments": args})

    async def raw(self, frame: str | bytes) -> dict[str, Any]:
        """Send a frame as is; the next answer with id null (or the given id) comes back."""
        await self.ws.send(frame)
        await self._read(5.0)
        if self.others:
            return self.others.pop()
        return self.answers.popitem()[1]


def texts(answer: dict[str, Any]) -> list[str]:
    assert "result" in answer, answer
    return [item["text"] for item in answer["result"]["content"]]


def payload(answer: dict[str, Any]) -> Any:
    """The JSON a tool answered in its single text item."""
    (text,) = texts(answer)
    return json.loads(text)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def host() -> RecordingHost:
    return RecordingHost()


@pytest.fixture
async def server(host: RecordingHost, workspace: Path, tmp_path: Path) -> AsyncIterator[IdeServer]:
    srv = await start_ide_server(host, [workspace], config_dir=tmp_path / "cfg")
    try:
        yield srv
    finally:
        await srv.close()


def open_ws(srv: IdeServer, **kwargs: Any) -> Any:
    kwargs.setdefault("additional_headers", {TOKEN_HEADER: srv.token})
    kwargs.setdefault("subprotocols", ["mcp"])
    return connect(srv.url, open_timeout=5, **kwargs)


async def cli(srv: IdeServer, pid: int = 4242) -> tuple[ClientConnection, Mcp]:
    """Connect and introduce ourselves the way Claude Code does."""
    ws = await open_ws(srv)
    rpc = Mcp(ws)
    init = await rpc.call(
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {"roots": {}, "elicitation": {}},
            "clientInfo": {"name": "claude-code", "version": "2.1.197"},
        },
    )
    assert init["result"]["protocolVersion"] == "2025-11-25"
    await rpc.notify("notifications/initialized", {})
    await rpc.notify("ide_connected", {"pid": pid})
    assert [t["name"] for t in (await rpc.call("tools/list"))["result"]["tools"]] == [
        "getDiagnostics"
    ]
    assert (await rpc.call("prompts/list"))["result"] == {"prompts": []}
    return ws, rpc


def diff_args(path: Path, contents: str, tab: str) -> dict[str, Any]:
    return {
        "old_file_path": str(path),
        "new_file_path": str(path),
        "new_file_contents": contents,
        "tab_name": tab,
    }


# --------------------------------------------------------------------------- the upgrade


async def refused(srv: IdeServer, **kwargs: Any) -> int:
    with pytest.raises(InvalidStatus) as err:
        async with open_ws(srv, **kwargs):
            pass
    return int(err.value.response.status_code)


async def test_the_token_header_is_required(server: IdeServer) -> None:
    assert await refused(server, additional_headers={}) == 401
    assert await refused(server, additional_headers={TOKEN_HEADER: "0" * 32}) == 401
    assert await refused(server, additional_headers={TOKEN_HEADER: server.token[:-1]}) == 401
    # The Authorization header of Baton's own endpoint is not this server's credential.
    assert await refused(server, additional_headers={"Authorization": server.token}) == 401
    twice = [(TOKEN_HEADER, server.token), (TOKEN_HEADER, server.token)]
    assert await refused(server, additional_headers=twice) == 401
    async with open_ws(server) as ws:
        assert ws.subprotocol == "mcp"
        assert (await Mcp(ws).call("ping"))["result"] == {}


async def test_any_origin_is_refused_even_with_the_token(server: IdeServer) -> None:
    assert await refused(server, origin="http://127.0.0.1:8000") == 403
    assert await refused(server, origin="null") == 403
    assert server.connections == 0


async def test_subprotocol_mcp_or_none(server: IdeServer) -> None:
    async with open_ws(server, subprotocols=None) as ws:
        assert ws.subprotocol is None
        assert (await Mcp(ws).call("ping"))["result"] == {}
    async with open_ws(server, subprotocols=["chat", "mcp"]) as ws:
        assert ws.subprotocol == "mcp"
    assert await refused(server, subprotocols=["chat"]) == 400


async def test_connections_are_capped(host: RecordingHost, workspace: Path, tmp_path: Path) -> None:
    limits = IdeLimits(max_connections=1)
    srv = IdeServer(host, [workspace], config_dir=tmp_path / "cfg", limits=limits)
    await srv.start()
    try:
        async with open_ws(srv):
            assert await refused(srv) == 503
        await asyncio.sleep(0.1)
        async with open_ws(srv) as ws:
            assert (await Mcp(ws).call("ping"))["result"] == {}
    finally:
        await srv.close()


# --------------------------------------------------------------------------- bad input


async def test_malformed_frames_get_errors_and_the_server_stays_up(server: IdeServer) -> None:
    async with open_ws(server) as ws:
        rpc = Mcp(ws)

        async def code(frame: str | bytes) -> tuple[Any, int]:
            answer = await rpc.raw(frame)
            return answer["id"], answer["error"]["code"]

        assert await code("{not json") == (None, -32700)
        assert await code("[1, 2]") == (None, -32600)
        assert await code('"a string"') == (None, -32600)
        assert await code(b'{"jsonrpc":"2.0","id":1,"method":"ping"}') == (None, -32600)
        assert await code('{"id": 7, "method": "ping"}') == (7, -32600)
        assert await code('{"jsonrpc":"2.0","id":true,"method":"ping"}') == (None, -32600)
        assert await code('{"jsonrpc":"2.0","id":8,"method":""}') == (8, -32600)
        assert await code('{"jsonrpc":"2.0","id":9,"method":"ping","params":[1]}') == (9, -32602)
        assert (await rpc.call("resources/read"))["error"]["code"] == -32601
        assert (await rpc.call("tools/call", {"arguments": {}}))["error"]["code"] == -32602
        assert (await rpc.call("tools/call", {"name": "x", "arguments": 3}))["error"]["code"] == (
            -32602
        )
        assert (await rpc.tool("rm_rf"))["error"]["code"] == -32602
        assert (await rpc.tool("openDiff", tab_name="t"))["error"]["code"] == -32602
        assert (await rpc.tool("openDiff", **diff_args(Path("/x"), "y", "")))["error"][
            "code"
        ] == -32602
        assert (await rpc.tool("close_tab", tab_name=5))["error"]["code"] == -32602
        assert (await rpc.tool("checkDocumentDirty"))["error"]["code"] == -32602
        # Unknown notifications and answers to nothing are ignored, not answered.
        await rpc.notify("no/such/notification", {"x": 1})
        await ws.send('{"jsonrpc":"2.0","id":99,"result":{}}')
        await ws.send('{"jsonrpc":"2.0","method":"ide_connected","params":{"pid":"many"}}')
        assert (await rpc.call("ping"))["result"] == {}
        assert rpc.others == [] and rpc.answers == {}
    async with open_ws(server) as ws:
        assert (await Mcp(ws).call("ping"))["result"] == {}


async def test_an_oversized_message_ends_only_that_connection(
    host: RecordingHost, workspace: Path, tmp_path: Path
) -> None:
    srv = IdeServer(host, [workspace], config_dir=tmp_path / "cfg", limits=IdeLimits(4096))
    await srv.start()
    try:
        async with open_ws(srv) as ws:
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x" * 5000}))
            with pytest.raises(ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 5)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
        async with open_ws(srv) as ws:
            assert (await Mcp(ws).call("ping"))["result"] == {}
    finally:
        await srv.close()


# --------------------------------------------------------------------------- MCP


async def test_initialize_lists_and_the_client(server: IdeServer, host: RecordingHost) -> None:
    async with open_ws(server) as ws:
        rpc = Mcp(ws)
        for asked, answered in [
            ("2025-11-25", "2025-11-25"),
            ("2024-11-05", "2024-11-05"),
            ("1999-01-01", "2025-11-25"),
            (None, "2025-11-25"),
        ]:
            params = {"protocolVersion": asked} if asked else {}
            result = (await rpc.call("initialize", params))["result"]
            assert result["protocolVersion"] == answered
        assert set(result["capabilities"]) == {"tools", "prompts"}
        assert result["serverInfo"]["name"].startswith("Baton")
        # Not Claude Code until it says so (ide_connected), not ready until it has the tools.
        await rpc.notify("ide_connected", {"pid": 1})
        assert (await rpc.call("prompts/list"))["result"] == {"prompts": []}
        assert server.clients == [] and host.connected == []
        tools = (await rpc.call("tools/list"))["result"]["tools"]
        assert [t["name"] for t in tools] == ["getDiagnostics"]
        assert tools[0]["inputSchema"]["properties"]["uri"]["type"] == "string"
        assert [c.pid for c in server.clients] == [1] and len(host.connected) == 1
    await host.until(lambda: len(host.disconnected) == 1)
    assert server.clients == []
    host.connected.clear()
    host.disconnected.clear()
    ws, rpc = await cli(server, pid=31337)
    await host.until(lambda: len(host.connected) == 1)
    client = await server.wait_for_client(1)
    assert (client.pid, client.name, client.version) == (31337, "claude-code", "2.1.197")
    assert client.protocol_version == "2025-11-25" and host.connected == [client]
    await ws.close()
    await host.until(lambda: host.disconnected == [client])
    assert server.clients == []


async def test_notify_reaches_connected_sessions(server: IdeServer) -> None:
    ws, rpc = await cli(server)
    try:
        await server.wait_for_client(2)
        params = {"filePath": "/w/a.py", "lineStart": 1, "lineEnd": 3}
        assert await server.notify("at_mentioned", params) == 1
        await rpc._read(5)
        assert rpc.others == [{"jsonrpc": "2.0", "method": "at_mentioned", "params": params}]
    finally:
        await ws.close()


# --------------------------------------------------------------------------- openDiff


async def test_open_diff_blocks_until_the_host_saves(
    server: IdeServer, host: RecordingHost, workspace: Path
) -> None:
    path = workspace / "app.py"
    path.write_text("old\n")
    ws, rpc = await cli(server)
    try:
        rid = await rpc.send(
            "tools/call", {"name": "openDiff", "arguments": diff_args(path, "new\n", "T1")}
        )
        request = await host.next_request()
        assert request == DiffRequest("T1", str(path), str(path), "new\n", "old\n", 4242)
        assert await rpc.unanswered(rid, 0.5)
        assert server.tabs == {"T1": True}
        host.decide("T1", DiffDecision.accept("new, edited\n"))
        assert texts(await rpc.answer(rid)) == ["FILE_SAVED", "new, edited\n"]
        assert server.tabs == {"T1": False}  # decided, not closed yet
        assert host.closed_tabs == []
        # The CLI writes the file, then closes the tab (twice, as 2.1.197 does).
        assert texts(await rpc.tool("close_tab", tab_name="T1")) == ["TAB_CLOSED"]
        assert texts(await rpc.tool("close_tab", tab_name="T1")) == ["TAB_CLOSED"]
        assert host.closed_tabs == [("T1", "cli")] and host.cancelled == []
        assert server.tabs == {}
        assert path.read_text() == "old\n"  # the server never writes files
    finally:
        await ws.close()


async def test_open_diff_rejected_and_new_files(
    server: IdeServer, host: RecordingHost, workspace: Path
) -> None:
    path = workspace / "sub" / "new.txt"
    ws, rpc = await cli(server)
    try:
        rid = await rpc.send(
            "tools/call", {"name": "openDiff", "arguments": diff_args(path, "x", "T2")}
        )
        request = await host.next_request()
        assert request.is_new_file and request.old_contents is None
        host.decide("T2", DiffDecision.reject())
        assert texts(await rpc.answer(rid)) == ["DIFF_REJECTED", "T2"]
        assert not path.exists()
    finally:
        await ws.close()
    await host.until(lambda: host.closed_tabs == [("T2", "disconnect")])


async def test_a_second_diff_with_the_same_tab_rejects_the_first(
    server: IdeServer, host: RecordingHost, workspace: Path
) -> None:
    path = workspace / "a.txt"
    ws, rpc = await cli(server)
    try:
        first = await rpc.send(
            "tools/call", {"name": "openDiff", "arguments": diff_args(path, "1", "T")}
        )
        await host.next_request(1)
        second = await rpc.send(
            "tools/call", {"name": "openDiff", "arguments": diff_args(path, "2", "T")}
        )
        assert texts(await rpc.answer(first)) == ["DIFF_REJECTED", "T"]
        await host.next_request(2)
        await host.until(lambda: host.cancelled == ["T"])
        assert host.closed_tabs == [("T", "replaced")]
        assert host.pending() == ["T"] and server.tabs == {"T": True}
        host.decide("T", DiffDecision.accept("2"))
        assert texts(await rpc.answer(second)) == ["FILE_SAVED", "2"]
    finally:
        await ws.close()


async def test_close_tab_cancels_a_pending_diff(
    server: IdeServer, host: RecordingHost, workspace: Path
) -> None:
    ws, rpc = await cli(server)
    try:
        rid = await rpc.send(
            "tools/call", {"name": "openDiff", "arguments": diff_args(workspace / "f", "x", "T")}
        )
        await host.next_request()
        # The user answered in the terminal: the CLI writes, then closes the tab.
        assert texts(await rpc.tool("close_tab", tab_name="T")) == ["TAB_CLOSED"]
        assert texts(await rpc.answer(rid)) == ["DIFF_REJECTED", "T"]
        await host.until(lambda: host.cancelled == ["T"])
        assert host.closed_tabs == [("T", "cli")] and server.tabs == {}
        # Closing a tab nobody opened is fine and tells the host nothing.
        assert texts(await rpc.tool("close_tab", tab_name="other")) == ["TAB_CLOSED"]
        assert host.closed_tabs == [("T", "cli")]
    finally:
        await ws.close()


async def test_the_cli_cancelling_the_request_closes_the_tab_unanswered(
    server: IdeServer, host: RecordingHost, workspace: Path
) -> None:
    ws, rpc = await cli(server)
    try:
        rid = await rpc.send(
            "tools/call", {"name": "openDiff", "arguments": diff_args(workspace / "f", "x", "T")}
        )
        await host.next_request()
        await rpc.notify("notifications/cancelled", {"requestId": rid, "reason": "aborted"})
        await host.until(lambda: host.closed_tabs == [("T", "cli")])
        assert host.cancelled == ["T"]
        assert await rpc.unanswered(rid, 0.5)
    finally:
        await ws.close()


async def test_close_all_diff_tabs_closes_only_this_sessions_tabs(
    server: IdeServer, host: RecordingHost, workspace: Path
) -> None:
    ws_a, a = await cli(server, pid=1001)
    ws_b, b = await cli(server, pid=1002)
    try:
        assert texts(await a.tool("closeAllDiffTabs")) == ["CLOSED_0_DIFF_TABS"]
        ra1 = await a.send(
            "tools/call", {"name": "openDiff", "arguments": diff_args(workspace / "1", "x", "A1")}
        )
        ra2 = await a.send(
            "tools/call", {"name": "openDiff", "arguments": diff_args(workspace / "2", "x", "A2")}
        )
        rb = await b.send(
            "tools/call", {"name": "openDiff", "arguments": diff_args(workspace / "3", "x", "B")}
        )
        await host.next_request(3)
        assert {r.tab_name: r.client_pid for r in host.requests} == {
            "A1": 1001,
            "A2": 1001,
            "B": 1002,
        }
        assert texts(await a.tool("closeAllDiffTabs")) == ["CLOSED_2_DIFF_TABS"]
        assert texts(await a.answer(ra1)) == ["DIFF_REJECTED", "A1"]
        assert texts(await a.answer(ra2)) == ["DIFF_REJECTED", "A2"]
        assert sorted(host.closed_tabs) == [("A1", "cli"), ("A2", "cli")]
        assert server.tabs == {"B": True}
        host.decide("B", DiffDecision.accept("x"))
        assert texts(await b.answer(rb))[0] == "FILE_SAVED"
    finally:
        await ws_a.close()
        await ws_b.close()


async def test_a_disconnect_cancels_the_sessions_diffs(
    server: IdeServer, host: RecordingHost, workspace: Path
) -> None:
    ws, rpc = await cli(server)
    for tab in ("T1", "T2"):
        await rpc.send(
            "tools/call", {"name": "openDiff", "arguments": diff_args(workspace / tab, "x", tab)}
        )
    await host.next_request(2)
    host.decide("T2", DiffDecision.accept("x"))  # decided, but the CLI has not closed it yet
    assert texts(await rpc.answer(5)) == ["FILE_SAVED", "x"]  # ids 1-3 introduced us
    await ws.close()
    await host.until(lambda: len(host.closed_tabs) == 2)
    assert sorted(host.closed_tabs) == [("T1", "disconnect"), ("T2", "disconnect")]
    await host.until(lambda: host.cancelled == ["T1"])
    assert server.tabs == {} and server.connections == 0
    assert len(host.disconnected) == 1


async def test_closing_the_server_closes_pending_diffs_and_the_lock(
    host: RecordingHost, workspace: Path, tmp_path: Path
) -> None:
    srv = await start_ide_server(host, [workspace], config_dir=tmp_path / "cfg")
    assert srv.lock_path is not None and srv.lock_path.exists()
    ws, rpc = await cli(srv)
    await rpc.send(
        "tools/call", {"name": "openDiff", "arguments": diff_args(workspace / "f", "x", "T")}
    )
    await host.next_request()
    await srv.close()
    assert host.closed_tabs == [("T", "shutdown")]
    await host.until(lambda: host.cancelled == ["T"])
    assert not srv.lock_path.exists()
    with pytest.raises(ConnectionClosed):
        await asyncio.wait_for(ws.recv(), 5)


async def test_a_host_that_cannot_show_a_diff(
    host: RecordingHost, server: IdeServer, workspace: Path
) -> None:
    def policy(request: DiffRequest) -> DiffDecision | DiffUnavailable | None:
        if request.tab_name == "dirty":
            return DiffUnavailable("save or discard the editor's changes to f first")
        raise RuntimeError("a bug in the host")

    host.policy = policy
    ws, rpc = await cli(server)
    try:
        refused = await rpc.tool("openDiff", **diff_args(workspace / "f", "x", "dirty"))
        assert refused["error"] == {
            "code": -32000,
            "message": "save or discard the editor's changes to f first",
        }
        broken = await rpc.tool("openDiff", **diff_args(workspace / "g", "x", "bug"))
        assert broken["error"]["code"] == -32603
        assert "bug" not in broken["error"]["message"]  # no internals to the CLI
        assert (await rpc.call("ping"))["result"] == {}
        assert set(server.tabs) == {"dirty", "bug"}  # closed by the CLI as usual
    finally:
        await ws.close()
    await host.until(lambda: len(host.closed_tabs) == 2)


async def test_requests_in_flight_are_capped(
    host: RecordingHost, workspace: Path, tmp_path: Path
) -> None:
    limits = IdeLimits(max_inflight=2)
    srv = IdeServer(host, [workspace], config_dir=tmp_path / "cfg", limits=limits)
    await srv.start()
    try:
        ws, rpc = await cli(srv)
        for tab in ("a", "b"):
            await rpc.send(
                "tools/call",
                {"name": "openDiff", "arguments": diff_args(workspace / tab, "x", tab)},
            )
        await host.next_request(2)
        busy = await rpc.call("ping")
        assert busy["error"]["code"] == -32002
        host.decide("a", DiffDecision.reject())
        assert texts(await rpc.answer(4)) == ["DIFF_REJECTED", "a"]  # ids 1-3 introduced us
        assert (await rpc.call("ping"))["result"] == {}
        await ws.close()
    finally:
        await srv.close()


# --------------------------------------------------------------------------- other tools


class DiffOnlyHost(IdeHost):
    """A host that answers only what is required: the others use their defaults."""

    async def open_diff(self, request: DiffRequest) -> DiffDecision:
        return DiffDecision.reject()

    def closed(self, tab_name: str, by: ClosedBy) -> None:
        pass


async def test_tools_without_providers_answer_safe_defaults(
    workspace: Path, tmp_path: Path
) -> None:
    srv = await start_ide_server(DiffOnlyHost(), [workspace], config_dir=tmp_path / "cfg")
    ws, rpc = await cli(srv)
    try:
        assert payload(await rpc.tool("getDiagnostics")) == []
        assert payload(await rpc.tool("getDiagnostics", uri="file:///x")) == []
        assert payload(await rpc.tool("getCurrentSelection")) == {
            "success": False,
            "message": "No active editor found",
        }
        assert payload(await rpc.tool("getLatestSelection"))["message"] == "No selection available"
        assert payload(await rpc.tool("getOpenEditors")) == {"tabs": []}
        folders = payload(await rpc.tool("getWorkspaceFolders"))
        assert folders == {
            "success": True,
            "folders": [{"name": "ws", "uri": f"file://{workspace}", "path": str(workspace)}],
            "rootPath": str(workspace),
        }
        assert payload(await rpc.tool("checkDocumentDirty", filePath="/w/a")) == {
            "success": False,
            "message": "Document not open: /w/a",
        }
        assert payload(await rpc.tool("saveDocument", filePath="/w/a"))["success"] is False
        opened = await rpc.tool("openFile", filePath="/w/a")
        assert opened["result"]["isError"] is True
        quiet = await rpc.tool("openFile", filePath="/w/a", makeFrontmost=False)
        assert payload(quiet)["success"] is False
        code = await rpc.tool("executeCode", code="import os; os.system('true')")
        assert code["result"]["isError"] is True and "not supported" in texts(code)[0]
    finally:
        await ws.close()
        await srv.close()


async def test_tools_answer_from_the_host(
    server: IdeServer, host: RecordingHost, workspace: Path
) -> None:
    a, b = str(workspace / "a.py"), str(workspace / "b.py")
    lsp = {
        "range": {"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 9}},
        "severity": 2,
        "message": "unused name",
        "source": "pyflakes",
        "code": "F841",
    }
    host.files = [
        FileDiagnostics(f"file://{a}", [Diagnostic.from_lsp(lsp)]),
        FileDiagnostics(f"file://{b}", []),
    ]
    host.selection = Selection(a, "name", Position(2, 4), Position(2, 8))
    host.editors = [OpenEditor(a, is_active=True, language_id="python")]
    host.dirty = {a: True}
    ws, rpc = await cli(server)
    try:
        everything = payload(await rpc.tool("getDiagnostics"))
        assert [f["uri"] for f in everything] == [f"file://{a}", f"file://{b}"]
        one = payload(await rpc.tool("getDiagnostics", uri=f"file://{a}"))
        assert one == [
            {
                "uri": f"file://{a}",
                "diagnostics": [
                    {
                        "message": "unused name",
                        "severity": "Warning",
                        "range": {
                            "start": {"line": 2, "character": 4},
                            "end": {"line": 2, "character": 9},
                        },
                        "source": "pyflakes",
                        "code": "F841",
                    }
                ],
            }
        ]
        assert host.diagnostics_asked == [None, f"file://{a}"]
        selection = payload(await rpc.tool("getCurrentSelection"))
        assert selection["success"] is True and selection["text"] == "name"
        assert selection["selection"]["end"] == {"line": 2, "character": 8}
        assert selection["selection"]["isEmpty"] is False and selection["filePath"] == a
        tabs = payload(await rpc.tool("getOpenEditors"))["tabs"]
        assert tabs == [
            {
                "uri": f"file://{a}",
                "isActive": True,
                "label": "a.py",
                "languageId": "python",
                "isDirty": False,
            }
        ]
        dirty = payload(await rpc.tool("checkDocumentDirty", filePath=a))
        assert dirty == {"success": True, "filePath": a, "isDirty": True, "isUntitled": False}
        saved = payload(await rpc.tool("saveDocument", filePath=a))
        assert saved["saved"] is True and host.dirty == {a: False}
        assert texts(await rpc.tool("openFile", filePath=a, startText="def")) == [
            f"Opened file: {a}"
        ]
        assert host.opened[0].start_text == "def" and host.opened[0].make_frontmost
    finally:
        await ws.close()


async def test_a_slow_provider_times_out_and_the_connection_goes_on(
    host: RecordingHost, workspace: Path, tmp_path: Path
) -> None:
    limits = IdeLimits(provider_timeout=0.2)
    srv = IdeServer(host, [workspace], config_dir=tmp_path / "cfg", limits=limits)
    await srv.start()
    host.slow = 2.0
    try:
        ws, rpc = await cli(srv)
        slow = await rpc.tool("getDiagnostics")
        assert slow["error"]["code"] == -32001
        assert (await rpc.call("ping"))["result"] == {}
        await ws.close()
    finally:
        await srv.close()


# --------------------------------------------------------------------------- the lock file


async def test_the_lock_file(host: RecordingHost, workspace: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    (cfg / "ide").mkdir(parents=True, mode=0o755)
    (cfg / "ide").chmod(0o755)
    srv = await start_ide_server(host, [workspace / "." / "sub" / ".."], config_dir=cfg)
    try:
        lock = srv.lock_path
        assert lock == cfg / "ide" / f"{srv.port}.lock"
        assert stat.S_IMODE((cfg / "ide").stat().st_mode) == 0o700
        assert stat.S_IMODE(lock.stat().st_mode) == 0o600
        data = json.loads(lock.read_text())
        assert data == {
            "pid": os.getpid(),
            "workspaceFolders": [str(workspace)],
            "ideName": "Baton",
            "transport": "ws",
            "authToken": srv.token,
        }
        assert len(srv.token) == 32 and int(srv.token, 16) >= 0
        assert [p.name for p in (cfg / "ide").iterdir()] == [lock.name]  # no temporary left
        srv.set_workspace_folders([workspace, tmp_path])
        assert json.loads(lock.read_text())["workspaceFolders"] == [str(workspace), str(tmp_path)]
    finally:
        await srv.close()
    assert not lock.exists()
    other = await start_ide_server(host, [workspace], config_dir=cfg)
    assert other.token != srv.token
    await other.close()


def test_the_lock_file_goes_at_exit(tmp_path: Path) -> None:
    """A process that never calls close() still removes its lock when it exits."""
    code = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from baton.surfaces.ide import start_ide_server\n"
        "from tests.integration.test_ide_server import DiffOnlyHost\n"
        "async def main():\n"
        "    srv = await start_ide_server(DiffOnlyHost(), ['.'], config_dir=Path(sys.argv[1]))\n"
        "    print(srv.lock_path, flush=True)\n"
        "    assert srv.lock_path.exists()\n"
        "asyncio.run(main())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "cfg")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": f"{REPO}:{REPO / 'server'}"},
    )
    assert out.returncode == 0, out.stderr
    lock = Path(out.stdout.strip())
    assert lock.parent == tmp_path / "cfg" / "ide" and not lock.exists()


async def test_stale_locks_of_ours_go_others_stay(
    host: RecordingHost, workspace: Path, tmp_path: Path
) -> None:
    cfg = tmp_path / "cfg"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead, alive = gone.pid, os.getppid()
    ours_dead = lockfile.write(1, lockfile.LockFile(dead, "t" * 32), cfg)
    theirs_dead = lockfile.write(
        2, lockfile.LockFile(dead, "t" * 32, ide_name="Visual Studio Code"), cfg
    )
    ours_alive = lockfile.write(3, lockfile.LockFile(alive, "t" * 32), cfg)
    broken = cfg / "ide" / "4.lock"
    broken.write_text("{not json")
    srv = await start_ide_server(host, [workspace], config_dir=cfg)
    try:
        assert not ours_dead.exists()
        assert theirs_dead.exists() and ours_alive.exists() and broken.exists()
    finally:
        await srv.close()


def test_the_claude_config_dir_and_the_launch_env(tmp_path: Path) -> None:
    assert claude_config_dir({"CLAUDE_CONFIG_DIR": "/c", "HOME": "/h"}) == Path("/c")
    assert claude_config_dir({"HOME": "/h"}) == Path("/h/.claude")
    assert claude_config_dir({"CLAUDE_CONFIG_DIR": "", "HOME": "/h"}) == Path("/h/.claude")
    env = claude_env(4321, {"PATH": "/bin", "CLAUDE_CODE_AUTO_CONNECT_IDE": "false"})
    assert env == {"PATH": "/bin", "CLAUDE_CODE_SSE_PORT": "4321", "ENABLE_IDE_INTEGRATION": "true"}
    with_cfg = claude_env(1, config_dir=tmp_path)
    assert with_cfg["CLAUDE_CONFIG_DIR"] == str(tmp_path)


async def test_random_frames_never_break_the_server(
    host: RecordingHost, server: IdeServer, workspace: Path
) -> None:
    """Every request (good, bad, or wrong-typed) gets one answer; the server stays healthy."""
    host.policy = lambda request: DiffDecision.reject()
    rng = random.Random(20261129)
    values: list[Any] = [None, 0, -1, 2**70, 1.5, True, "", "x", "\x00", [], [1], {}, {"a": 1}]
    keys = [
        "uri",
        "filePath",
        "tab_name",
        "old_file_path",
        "new_file_path",
        "new_file_contents",
        "makeFrontmost",
        "preview",
        "startText",
        "code",
    ]
    methods = ["tools/call", "initialize", "ping", "tools/list", "x/y", "ide_connected"]
    ws, rpc = await cli(server)
    try:
        sent: list[int] = []
        for i in range(300):
            rid = 10_000 + i
            method = rng.choice(methods)
            params: Any = {k: rng.choice(values) for k in rng.sample(keys, rng.randint(0, 5))}
            if method == "tools/call":
                params = {"name": rng.choice([*sorted(TOOL_NAMES), "nope", 3]), "arguments": params}
            if rng.random() < 0.1:
                params = rng.choice(values)
            frame = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
            if rng.random() < 0.05:
                await ws.send(json.dumps(frame)[: rng.randint(0, 40)])
                await rpc._read(5)
                continue
            await ws.send(json.dumps(frame))
            sent.append(rid)
        for rid in sent:
            answer = await rpc.answer(rid)
            assert ("result" in answer) != ("error" in answer), answer
        assert (await rpc.call("ping"))["result"] == {}
    finally:
        await ws.close()
    async with open_ws(server) as again:
        assert (await Mcp(again).call("ping"))["result"] == {}
