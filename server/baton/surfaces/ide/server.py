"""The IDE server Claude Code connects to: MCP (JSON-RPC 2.0) over a websocket on 127.0.0.1.

Baton plays "the IDE" for a Claude Code session running in a terminal: the CLI finds the server
through the lock file (:mod:`baton.surfaces.ide.lockfile`) and the port in
``CLAUDE_CODE_SSE_PORT``, connects with the lock's token, and calls tools; ``openDiff`` shows a
proposed edit through the :class:`~baton.surfaces.ide.host.IdeHost` and blocks until the host
decides.

Security: loopback only, ephemeral port; the upgrade must carry
``X-Claude-Code-Ide-Authorization: <token>`` (compared in constant time, 401 otherwise); any
request with an ``Origin`` header is refused with 403 (browsers always send one; see
CVE-2025-52882); a client offering subprotocols must offer ``mcp`` (400 otherwise); messages are
size-limited, connections and requests in flight are capped; malformed frames get JSON-RPC
errors and never end the server. No tool runs code (``executeCode`` is refused).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import stat
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any, TypeVar

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed, NegotiationError
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

import baton.surfaces.ide.lockfile as lockfile
import baton.surfaces.ide.rpc as rpc
import baton.surfaces.ide.tools as t
from baton.surfaces.ide.editor_tools import EDITOR_TOOLS, answer_tool
from baton.surfaces.ide.host import (
    ClosedBy,
    DiffDecision,
    DiffRequest,
    DiffUnavailable,
    IdeClient,
    IdeHost,
)
from baton.surfaces.ws.handshake import same

log = logging.getLogger(__name__)

TOKEN_HEADER = "X-Claude-Code-Ide-Authorization"
SUBPROTOCOL = Subprotocol("mcp")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class IdeLimits:
    max_message: int = 64 << 20  # bytes per incoming message (openDiff carries a whole file)
    max_connections: int = 8  # Claude Code sessions at once
    max_inflight: int = 64  # requests being handled at once per connection
    provider_timeout: float = 10.0  # seconds for a host's answer, except open_diff (no limit)


@dataclass(eq=False)
class _Conn:
    ws: ServerConnection
    id: int
    pid: int | None = None
    name: str = ""
    version: str = ""
    protocol: str = ""
    introduced: bool = False  # it sent ide_connected
    listed: bool = False  # it was sent the tool list
    announced: bool = False  # the host was told (client_connected)
    inflight: dict[asyncio.Task[None], rpc.RequestId] = field(default_factory=dict)

    def info(self) -> IdeClient:
        return IdeClient(self.id, self.pid, self.name, self.version, self.protocol)


@dataclass(eq=False)
class _Tab:
    """A diff the CLI opened and has not closed yet (pending, or decided and awaiting close)."""

    request: DiffRequest
    conn: _Conn
    rid: rpc.RequestId
    decision: asyncio.Task[DiffDecision]
    answer: bool = True  # answer DIFF_REJECTED if closed while pending (not after a cancel)


_NO_ANSWER: Any = object()


class IdeServer:
    """One IDE server: a websocket listener, its lock file and the diffs it shows.

    Use :func:`start_ide_server`, then :meth:`close` (or ``async with``).
    """

    def __init__(
        self,
        host: IdeHost,
        workspace_folders: Sequence[str | os.PathLike[str]],
        *,
        ide_name: str = "Baton",
        config_dir: Path | None = None,
        limits: IdeLimits | None = None,
        token: str | None = None,
    ) -> None:
        self.host = host
        self.workspace_folders = [str(Path(f).resolve()) for f in workspace_folders]
        self.ide_name = ide_name
        self.config_dir = config_dir
        self.limits = limits or IdeLimits()
        self.token = token or lockfile.new_token()
        self.port = 0
        self.lock_path: Path | None = None
        self._server: Server | None = None
        self._conns: dict[int, _Conn] = {}
        self._tabs: dict[str, _Tab] = {}
        self._next_conn = 0
        self._changed = asyncio.Event()  # set whenever a client comes or goes

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self.config_dir is None:
            self.config_dir = lockfile.claude_config_dir()
        for stale in lockfile.remove_stale(self.ide_name, self.config_dir):
            log.info("removed the stale IDE lock file %s", stale)
        self._server = await serve(
            self._handle,
            "127.0.0.1",
            0,
            process_request=self._check_upgrade,
            select_subprotocol=_select_subprotocol,
            max_size=self.limits.max_message,
            compression=None,
            server_header=None,
        )
        sock = next(iter(self._server.sockets))
        self.port = int(sock.getsockname()[1])
        self._write_lock()
        atexit.register(self._remove_lock)

    async def close(self) -> None:
        """Stop listening, close every pending diff (``"shutdown"``), end the connections and
        remove the lock file."""
        self._remove_lock()
        atexit.unregister(self._remove_lock)
        for conn in list(self._conns.values()):
            self._drop(conn, "shutdown")
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5.0)
            self._server = None

    async def __aenter__(self) -> IdeServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def set_workspace_folders(self, folders: Sequence[str | os.PathLike[str]]) -> None:
        """The editor's folders changed: rewrite the lock file."""
        self.workspace_folders = [str(Path(f).resolve()) for f in folders]
        if self._server is not None:
            self._write_lock()

    def _write_lock(self) -> None:
        lock = lockfile.LockFile(
            pid=os.getpid(),
            auth_token=self.token,
            workspace_folders=self.workspace_folders,
            ide_name=self.ide_name,
        )
        self.lock_path = lockfile.write(self.port, lock, self.config_dir)

    def _remove_lock(self) -> None:
        if self.lock_path is not None:
            lockfile.remove(self.lock_path)

    # ------------------------------------------------------------------ what callers look at

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    @property
    def clients(self) -> list[IdeClient]:
        """The connected Claude Code sessions: each sent ``ide_connected`` and got the tool list
        (after which the CLI uses the IDE for its next edit)."""
        return [c.info() for c in self._conns.values() if c.announced]

    @property
    def connections(self) -> int:
        return len(self._conns)

    @property
    def tabs(self) -> dict[str, bool]:
        """The diff tabs open now: tab name → still pending (True) or decided (False)."""
        return {name: not tab.decision.done() for name, tab in self._tabs.items()}

    async def wait_for_client(self, timeout: float = 30.0) -> IdeClient:
        """The first connected Claude Code session; waits up to ``timeout`` seconds for one."""
        async with asyncio.timeout(timeout):
            while not self.clients:
                self._changed.clear()
                await self._changed.wait()
        return self.clients[0]

    async def notify(self, method: str, params: dict[str, Any]) -> int:
        """Send a notification (e.g. ``selection_changed``, ``at_mentioned``) to every
        connected session; returns how many were sent."""
        text = rpc.notification(method, params)
        sent = 0
        for conn in list(self._conns.values()):
            if conn.announced:
                with contextlib.suppress(ConnectionClosed):
                    await conn.ws.send(text)
                    sent += 1
        return sent

    # ------------------------------------------------------------------ the handshake

    def _check_upgrade(self, conn: ServerConnection, request: Request) -> Response | None:
        if "Origin" in request.headers:
            return _refuse(conn, HTTPStatus.FORBIDDEN, "requests with an Origin header are refused")
        presented = request.headers.get_all(TOKEN_HEADER)
        if len(presented) != 1 or not same(presented[0], self.token):
            return _refuse(conn, HTTPStatus.UNAUTHORIZED, "missing or wrong token")
        if len(self._conns) >= self.limits.max_connections:
            return _refuse(conn, HTTPStatus.SERVICE_UNAVAILABLE, "too many connections")
        return None

    # ------------------------------------------------------------------ a connection

    async def _handle(self, ws: ServerConnection) -> None:
        self._next_conn += 1
        conn = _Conn(ws, self._next_conn)
        self._conns[conn.id] = conn
        try:
            async for frame in ws:
                await self._accept(conn, frame)
        except ConnectionClosed:
            pass
        finally:
            self._drop(conn, "disconnect")

    async def _accept(self, conn: _Conn, frame: str | bytes) -> None:
        """Take one frame: errors are answered at once (reading waits for the send), requests
        run concurrently as tasks (openDiff blocks for as long as the user decides)."""
        try:
            msg = rpc.parse(frame)
        except rpc.RpcError as err:
            await self._send(conn, rpc.error_response(err.rid, err))
            return
        if msg.method is None:
            return  # a response: we send no requests
        if msg.id is None:
            self._notified(conn, msg.method, msg.params)
            return
        if len(conn.inflight) >= self.limits.max_inflight:
            busy = rpc.RpcError(rpc.BUSY, f"more than {self.limits.max_inflight} requests at once")
            await self._send(conn, rpc.error_response(msg.id, busy))
            return
        task = asyncio.get_running_loop().create_task(
            self._run(conn, msg.method, msg.params, msg.id)
        )
        conn.inflight[task] = msg.id
        task.add_done_callback(lambda done: conn.inflight.pop(done, None))

    def _notified(self, conn: _Conn, method: str, params: dict[str, Any]) -> None:
        if method == "ide_connected":
            pid = params.get("pid")
            if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0:
                conn.pid = pid
            conn.introduced = True
            self._announce(conn)
        elif method == "notifications/cancelled":
            self._cancelled(conn, params.get("requestId"))
        # notifications/initialized and anything else: nothing to do

    def _announce(self, conn: _Conn) -> None:
        if conn.introduced and conn.listed and not conn.announced and conn.id in self._conns:
            conn.announced = True
            self._changed.set()
            _quietly(self.host.client_connected, conn.info())

    def _cancelled(self, conn: _Conn, rid: object) -> None:
        for name, tab in list(self._tabs.items()):
            if tab.conn is conn and tab.rid == rid:
                tab.answer = False
                self._close_tab(name, "cli")
                return
        for task, task_rid in list(conn.inflight.items()):
            if task_rid == rid:
                task.cancel()

    async def _run(
        self, conn: _Conn, method: str, params: dict[str, Any], rid: rpc.RequestId
    ) -> None:
        try:
            result = await self._dispatch(conn, method, params, rid)
        except rpc.RpcError as err:
            await self._send(conn, rpc.error_response(rid, err))
            return
        except Exception as exc:
            log.exception("IDE request %s failed", method)
            failed = rpc.RpcError(rpc.INTERNAL_ERROR, f"{method} failed: {type(exc).__name__}")
            await self._send(conn, rpc.error_response(rid, failed))
            return
        if result is not _NO_ANSWER:
            await self._send(conn, rpc.response(rid, result))
        if method == "tools/list" and not conn.listed:
            conn.listed = True
            self._announce(conn)

    async def _send(self, conn: _Conn, text: str) -> None:
        with contextlib.suppress(ConnectionClosed):
            await conn.ws.send(text)

    def _drop(self, conn: _Conn, by: ClosedBy) -> None:
        if self._conns.pop(conn.id, None) is None:
            return
        for name, tab in list(self._tabs.items()):
            if tab.conn is conn:
                self._close_tab(name, by)
        for task in list(conn.inflight):
            task.cancel()
        if conn.announced:
            conn.announced = False
            _quietly(self.host.client_disconnected, conn.info())
        self._changed.set()

    # ------------------------------------------------------------------ methods

    async def _dispatch(
        self, conn: _Conn, method: str, params: dict[str, Any], rid: rpc.RequestId
    ) -> Any:
        if method == "initialize":
            info = params.get("clientInfo")
            if isinstance(info, dict):
                conn.name = str(info.get("name", ""))[:200]
                conn.version = str(info.get("version", ""))[:200]
            result = t.initialize_result(params.get("protocolVersion"), self.ide_name)
            conn.protocol = result["protocolVersion"]
            return result
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": t.LISTED_TOOLS}
        if method == "prompts/list":
            return {"prompts": []}
        if method == "tools/call":
            name, args = t.arguments(params)
            return await self._call_tool(conn, rid, name, args)
        raise rpc.RpcError(rpc.METHOD_NOT_FOUND, f"unknown method: {method[:100]}")

    async def _provide(self, answer: Awaitable[T]) -> T:
        try:
            return await asyncio.wait_for(answer, self.limits.provider_timeout)
        except TimeoutError:
            raise rpc.RpcError(rpc.TIMED_OUT, "the editor did not answer in time") from None

    async def _call_tool(
        self, conn: _Conn, rid: rpc.RequestId, name: str, args: dict[str, Any]
    ) -> Any:
        host = self.host
        if name == "openDiff":
            return await self._open_diff(conn, rid, args)
        if name == "close_tab":
            self._close_tab(t.string(args, "tab_name"), "cli")
            return t.text_result(t.TAB_CLOSED)
        if name == "closeAllDiffTabs":
            mine = [n for n, tab in self._tabs.items() if tab.conn is conn]
            for tab_name in mine:
                self._close_tab(tab_name, "cli")
            return t.closed_tabs(len(mine))
        if name in EDITOR_TOOLS:
            return await answer_tool(host, name, args, self._provide, self.workspace_folders)
        raise rpc.RpcError(rpc.INVALID_PARAMS, f"unknown tool: {name[:100]}")

    # ------------------------------------------------------------------ diffs

    async def _open_diff(self, conn: _Conn, rid: rpc.RequestId, args: dict[str, Any]) -> Any:
        old_path = t.path(args, "old_file_path")
        new_path = t.path(args, "new_file_path")
        contents = t.string(args, "new_file_contents")
        tab_name = t.string(args, "tab_name")
        if not tab_name:
            raise rpc.RpcError(rpc.INVALID_PARAMS, "tab_name: must not be empty")
        old = await asyncio.to_thread(_read_text, old_path, self.limits.max_message)
        if conn.id not in self._conns:
            return _NO_ANSWER  # the CLI left while we read the file
        if tab_name in self._tabs:
            self._close_tab(tab_name, "replaced")
        request = DiffRequest(
            tab_name=tab_name,
            old_file_path=old_path,
            new_file_path=new_path,
            new_file_contents=contents,
            old_contents=old,
            client_pid=conn.pid,
        )
        decision = asyncio.get_running_loop().create_task(self.host.open_diff(request))
        tab = _Tab(request, conn, rid, decision)
        self._tabs[tab_name] = tab
        try:
            await asyncio.wait({decision})
        finally:
            if not decision.done():
                decision.cancel()  # this request was cancelled (disconnect, shutdown)
        if decision.cancelled():
            return t.rejected(tab_name) if tab.answer else _NO_ANSWER
        exc = decision.exception()
        if isinstance(exc, DiffUnavailable):
            raise rpc.RpcError(rpc.SERVER_ERROR, str(exc) or "the editor cannot show this diff")
        if exc is not None:
            log.error("open_diff failed for %s", tab_name, exc_info=exc)
            raise rpc.RpcError(rpc.INTERNAL_ERROR, "the editor failed to show the diff")
        result = decision.result()
        if not isinstance(result, DiffDecision):
            log.error("open_diff returned %r, not a DiffDecision", type(result).__name__)
            raise rpc.RpcError(rpc.INTERNAL_ERROR, "the editor failed to show the diff")
        return t.diff_result(result, tab_name)

    def _close_tab(self, tab_name: str, by: ClosedBy) -> bool:
        tab = self._tabs.pop(tab_name, None)
        if tab is None:
            return False
        if not tab.decision.done():
            tab.decision.cancel()
        _quietly(self.host.closed, tab_name, by)
        return True


async def start_ide_server(
    host: IdeHost,
    workspace_folders: Sequence[str | os.PathLike[str]],
    *,
    ide_name: str = "Baton",
    config_dir: Path | None = None,
    limits: IdeLimits | None = None,
) -> IdeServer:
    """Listen on 127.0.0.1 (ephemeral port) and write the lock file Claude Code reads.

    ``config_dir`` is Claude's config folder (default ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``);
    the lock goes to ``<config_dir>/ide/<port>.lock``. Call :meth:`IdeServer.close` when done.
    """
    server = IdeServer(
        host, workspace_folders, ide_name=ide_name, config_dir=config_dir, limits=limits
    )
    await server.start()
    return server


# --------------------------------------------------------------------------- helpers


def _select_subprotocol(
    conn: ServerConnection, offered: Sequence[Subprotocol]
) -> Subprotocol | None:
    """``mcp`` when offered (the CLI does); no subprotocol when none is offered; refuse a
    client that offers only others (400)."""
    if SUBPROTOCOL in offered:
        return SUBPROTOCOL
    if not offered:
        return None
    raise NegotiationError("unsupported subprotocol; this server speaks mcp")


def _refuse(conn: ServerConnection, status: HTTPStatus, text: str) -> Response:
    return conn.respond(status, text + "\n")


def _read_text(path: str, limit: int) -> str | None:
    """The file's text now (invalid UTF-8 replaced), or None when it is not a readable
    regular file (a new file)."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > limit:
            raise rpc.RpcError(rpc.SERVER_ERROR, f"{path} is larger than {limit} bytes")
        with open(path, "rb") as f:
            return f.read(limit + 1).decode("utf-8", "replace")
    except OSError:
        return None


def _quietly(fn: Any, *args: Any) -> None:
    """Call a host callback; its failure is logged, never the server's."""
    try:
        fn(*args)
    except Exception:
        log.exception("IDE host callback %s failed", getattr(fn, "__name__", fn))
