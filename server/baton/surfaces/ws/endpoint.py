"""The broker's websocket endpoint: JSON-RPC 2.0 on 127.0.0.1, one message per text frame.

Security: a token (from the 0600 discovery file) is required, either on the upgrade
(``Authorization: Bearer <token>``) or as the first message (``auth`` with ``{"token"}``),
compared in constant time; an upgrade carrying an ``Origin`` header, or a ``Host`` that is
not loopback, is refused (see :mod:`handshake`); each connection is rate-limited. A
message over the size limit is answered with an error naming the limit (up to
``read_limit``; past it, and before authentication, the connection closes with 1009).
Malformed frames get JSON-RPC errors; a handler's failure becomes an internal error for
that request only. No client can stop the broker or slow the others: each
committed batch of events is written to every subscriber at once, and a connection that
stops reading (its unsent data passes a bound) is told (``overflow``) and its subscriptions
end; it catches up from ``events`` by sequence number.

A headless broker listens before its Supervisor exists (``Endpoint(None, …)``, then
:meth:`Endpoint.attach`): the socket and the discovery file come first, and the runtime is
imported and started after. Connections are taken and authenticated meanwhile; every other
request waits until the Supervisor has started, then runs — or, when it could not start, is
answered with the reason (:meth:`Endpoint.fail`). Nothing is served from half a broker.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import secrets
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

import baton.surfaces.ws.discovery as discovery
import baton.surfaces.ws.protocol as p
import baton.surfaces.ws.subscribing as subscribing
from baton import __version__
from baton.core.events import Event, EventType
from baton.errors import NotFound
from baton.surfaces.ws.fanout import Bucket, Conn, Fanout, spread
from baton.surfaces.ws.handshake import check_upgrade, same, token_of

if TYPE_CHECKING:  # imported once a Supervisor is attached: a broker listens before
    from baton.runtime import Supervisor
    from baton.surfaces.dashboard.server import Dashboard
    from baton.surfaces.ws.methods import Methods

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EndpointLimits:
    max_message: int = 1 << 20  # bytes per incoming message
    # Bytes of a message still read (once authenticated) to answer it with an error naming
    # ``max_message``; a larger one closes the connection (1009) without being read.
    read_limit: int = 16 << 20
    rate: float = 500.0  # messages per second, sustained, per connection
    burst: int = 1000  # messages at once before the rate applies
    max_inflight: int = 32  # requests being handled at once per connection
    max_subscriptions: int = 64  # per connection
    # Unsent bytes to a connection past which its events are cut off: when they stay above
    # it for ``stalled`` seconds (it stopped reading), or reach 8 times it (it reads, but
    # far too slowly). A reader that keeps up drains below it between bursts.
    send_buffer: int = 4 << 20
    stalled: float = 2.0
    auth_timeout: float = 10.0  # seconds to present the token
    max_refused: int = 2000  # messages refused in a row (too fast) before the connection closes


class Endpoint:
    """One broker's websocket endpoint and its discovery file.

    Made without a Supervisor (``sup`` None), it is told the state home and the id of the
    one it will serve (``home``, ``broker``: the discovery file names both) and serves it
    from :meth:`attach` on.
    """

    def __init__(
        self,
        sup: Supervisor | None,
        roots: list[str],
        *,
        headless: bool = False,
        limits: EndpointLimits | None = None,
        runtime: Path | None = None,
        token: str | None = None,
        home: Path | None = None,
        broker: str = "",
    ) -> None:
        if sup is not None:
            home, broker = sup.home, sup.id
        elif home is None or not broker:
            raise ValueError("an endpoint without a Supervisor yet needs its home and broker id")
        self.roots = [str(Path(r).resolve()) for r in roots]
        self.headless = headless
        self.limits = limits or EndpointLimits()
        self.runtime = runtime
        self.token = token or secrets.token_hex(32)
        self.port = 0
        self.discovery_path: Path | None = None
        self.home = home.resolve()
        self.broker = broker
        self._sup: Supervisor | None = None
        self._methods: Methods | None = None
        #: Set once the Supervisor is attached, or could not start (``_start_error``).
        self._started = asyncio.Event()
        self._start_error: Exception | None = None
        self._server: Server | None = None
        self._conns: set[Conn] = set()
        self.fanout = Fanout(self.limits.send_buffer, self.limits.stalled)
        #: Milliseconds from a ``delegate`` frame read to its answer written (the last ones).
        self._delegated: deque[float] = deque(maxlen=10_000)
        # The page in the browser: a port of its own, opened by the first ``dashboard``
        # (made once a Supervisor is attached).
        self.dashboard: Dashboard | None = None
        self.idle_since: float | None = time.monotonic()
        self.started_at = time.time()
        if sup is not None:
            self.attach(sup)

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        self._server = await serve(
            self._handle,
            "127.0.0.1",
            0,
            process_request=self._check_upgrade,
            max_size=self.limits.max_message,  # raised per connection once authenticated
            max_queue=64,
            write_limit=1 << 20,
            compression=None,
            server_header=None,
        )
        sock = next(iter(self._server.sockets))
        self.port = int(sock.getsockname()[1])
        self._write_discovery()
        atexit.register(self._remove_discovery)

    def _write_discovery(self) -> None:
        record = discovery.Discovery(
            pid=os.getpid(),
            port=self.port,
            token=self.token,
            roots=self.roots,
            version=__version__,
            home=str(self.home),
            broker=self.broker,
            headless=self.headless,
            started_at=self.started_at,
        )
        folder = self.runtime if self.runtime is not None else _runtime_for(self.home)
        self.discovery_path = discovery.write(record, folder)

    def attach(self, sup: Supervisor) -> None:
        """Serve ``sup`` (started): the requests waiting for it go on."""
        from baton.surfaces.dashboard.server import Dashboard
        from baton.surfaces.ws.methods import Methods

        if self._sup is not None or self._start_error is not None:
            raise RuntimeError("the endpoint has its Supervisor, or was told it cannot start")
        self._sup = sup
        self._methods = Methods(sup, self.roots, self._info)
        self.dashboard = Dashboard(sup, self._methods.call, self.fanout.encode)
        sup.listen_batches(self._on_commit)
        named = (self.home, self.broker)
        self.home, self.broker = sup.home.resolve(), sup.id
        if self._server is not None and named != (self.home, self.broker):
            self._write_discovery()
        self._started.set()

    def fail(self, error: Exception) -> None:
        """The Supervisor could not start: the requests waiting for it, and any later one,
        are answered with ``error``'s message, and the discovery file goes (no client is
        to find this broker any more)."""
        if self._sup is None:
            self._start_error = error
            self._started.set()
            self._remove_discovery()

    @property
    def sup(self) -> Supervisor:
        """The Supervisor served (raises before :meth:`attach`)."""
        if self._sup is None:
            raise RuntimeError("the endpoint's Supervisor has not started")
        return self._sup

    @property
    def methods(self) -> Methods:
        if self._methods is None:
            raise RuntimeError("the endpoint's Supervisor has not started")
        return self._methods

    async def started(self) -> None:
        """Wait until the Supervisor is attached; raises an :class:`~p.RpcError` naming why
        when it could not start."""
        await self._started.wait()
        if self._start_error is not None:
            reason = _quoted(self._start_error)
            raise p.RpcError(p.INTERNAL_ERROR, f"the broker could not start: {reason}")

    async def linger(self, seconds: float) -> None:
        """Go on answering for ``seconds`` (a client that read the discovery file before it
        was removed connects meanwhile), then until the requests being handled are
        answered, at most as long again."""
        await asyncio.sleep(seconds)
        pending = [t for conn in self._conns for t in conn.inflight]
        if pending:
            await asyncio.wait(pending, timeout=seconds)

    def _remove_discovery(self) -> None:
        if self.discovery_path is not None:
            discovery.remove(self.discovery_path)

    def set_roots(self, roots: list[str]) -> None:
        """The broker now serves these folders (e.g. the editor's workspace changed)."""
        self.roots[:] = [str(Path(r).resolve()) for r in roots]
        if self._server is not None:
            self._write_discovery()

    async def close(self) -> None:
        """Stop listening, end every connection and remove the discovery file."""
        if self._sup is not None:
            self._sup.unlisten_batches(self._on_commit)
        if self.dashboard is not None:
            await self.dashboard.close()
        self._remove_discovery()
        atexit.unregister(self._remove_discovery)
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5.0)
            self._server = None
        for conn in list(self._conns):
            self._drop(conn)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    @property
    def connections(self) -> int:
        return len(self._conns)

    @property
    def dashboard_pages(self) -> int:
        """Dashboard pages open now (their live sockets)."""
        return self.dashboard.connections if self.dashboard is not None else 0

    def _info(self) -> dict[str, Any]:
        return {
            "connections": len(self._conns),
            "headless": self.headless,
            "fanout": self.fanout_lag(),
            "delegate": spread(self._delegated, "answers"),
            "dashboard": self.dashboard.stats() if self.dashboard is not None else None,
        }

    def fanout_lag(self) -> dict[str, Any]:
        """Milliseconds from an event's commit stamp to its frame written to every
        subscriber, over the last batches fanned out (median, p99, max)."""
        return self.fanout.lag()

    def _on_commit(self, events: list[Event]) -> None:
        self.fanout.on_commit(self._conns, events)

    # ------------------------------------------------------------------ the handshake

    def _check_upgrade(self, conn: ServerConnection, request: Request) -> Response | None:
        refused = check_upgrade(request.headers, self.token)
        if refused is not None:
            return conn.respond(refused.status, refused.text + "\n")
        if token_of(request.headers) is not None:
            self._read_oversized(conn)
        return None

    def _read_oversized(self, ws: ServerConnection) -> None:
        """Let an authenticated connection send messages over the limit, to be told so."""
        ws.protocol.max_message_size = max(self.limits.read_limit, self.limits.max_message)

    # ------------------------------------------------------------------ a connection

    async def _handle(self, ws: ServerConnection) -> None:
        request = ws.request
        authed = request is not None and token_of(request.headers) is not None
        conn = Conn(ws, authed, Bucket(self.limits.rate, self.limits.burst))
        self._conns.add(conn)
        self.idle_since = None
        watchdog = None
        if not authed:
            watchdog = asyncio.get_running_loop().call_later(
                self.limits.auth_timeout, lambda: asyncio.ensure_future(ws.close(1008, "no token"))
            )
        try:
            async for frame in ws:
                if not conn.bucket.take():
                    conn.refused += 1
                    if conn.refused > self.limits.max_refused:
                        await ws.close(1008, "too many messages")
                        break
                    await self._send(conn, p.error_response(None, _rate_limited()))
                    continue
                conn.refused = 0
                if not conn.authed:
                    if not await self._authenticate(conn, frame):
                        break
                    if watchdog is not None:
                        watchdog.cancel()
                    continue
                self._accept_frame(conn, frame)
        except ConnectionClosed:
            pass
        finally:
            if watchdog is not None:
                watchdog.cancel()
            self._drop(conn)

    async def _authenticate(self, conn: Conn, frame: str | bytes) -> bool:
        try:
            req = p.parse(frame)
        except p.RpcError as err:
            await self._send(conn, p.error_response(_rid(err), err))
            await conn.ws.close(1008, "authenticate first")
            return False
        token = req.params.get("token")
        if req.method != "auth" or not isinstance(token, str) or not same(token, self.token):
            what = "wrong token" if req.method == "auth" else "authenticate first: send auth"
            await self._send(conn, p.error_response(req.id, p.RpcError(p.UNAUTHORIZED, what)))
            await conn.ws.close(1008, what)
            return False
        conn.authed = True
        self._read_oversized(conn.ws)
        if req.id is not None:
            await self._send(conn, p.response(req.id, {"ok": True, "version": __version__}))
        return True

    def _accept_frame(self, conn: Conn, frame: str | bytes) -> None:
        too_large = p.too_large(frame, self.limits.max_message)
        try:
            req = p.parse(frame)
        except p.RpcError as err:
            self._reply_later(conn, p.error_response(_rid(err), too_large or err))
            return
        if too_large is not None:
            if req.id is not None:
                self._reply_later(conn, p.error_response(req.id, too_large))
            return
        if len(conn.inflight) >= self.limits.max_inflight:
            if req.id is not None:
                busy = p.RpcError(p.BUSY, f"more than {self.limits.max_inflight} requests at once")
                self._reply_later(conn, p.error_response(req.id, busy))
            return
        task = asyncio.get_running_loop().create_task(self._run(conn, req, time.perf_counter()))
        conn.inflight.add(task)
        task.add_done_callback(conn.inflight.discard)

    def _reply_later(self, conn: Conn, text: str) -> None:
        task = asyncio.get_running_loop().create_task(self._send(conn, text))
        conn.inflight.add(task)
        task.add_done_callback(conn.inflight.discard)

    async def _run(self, conn: Conn, req: p.Request, read_at: float) -> None:
        try:
            if req.method not in ("auth", "unsubscribe"):
                await self.started()
            if req.method in ("watch", "subscribe"):
                result = await subscribing.watch(
                    conn,
                    req,
                    sup=self.sup,
                    fanout=self.fanout,
                    max_subscriptions=self.limits.max_subscriptions,
                    send=self._send,
                )
            elif req.method == "unsubscribe":
                result = subscribing.unsubscribe(conn, req.params)
            elif req.method == "auth":
                result = {"ok": True, "version": __version__}
            elif req.method == "dashboard" and self.dashboard is not None:
                p.known(req.params)
                result = await self.dashboard.invite()
            else:
                result = await self.methods.call(req.method, req.params)
        except (p.RpcError, NotFound) as exc:
            err = exc if isinstance(exc, p.RpcError) else p.RpcError(exc.code, _quoted(exc))
            if req.id is not None:
                await self._send(conn, p.error_response(req.id, err))
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("%s failed", req.method)
            if req.id is not None:
                failed = p.RpcError(p.INTERNAL_ERROR, f"{req.method} failed: {exc}")
                await self._send(conn, p.error_response(req.id, failed))
            return
        if req.id is not None and result is not subscribing.SENT:
            await self._send(conn, p.response(req.id, result))
            if req.method == "delegate":
                self._delegated.append((time.perf_counter() - read_at) * 1000)

    async def _send(self, conn: Conn, text: str) -> None:
        with contextlib.suppress(ConnectionClosed):
            await conn.ws.send(text)

    def _drop(self, conn: Conn) -> None:
        for task in list(conn.inflight):
            task.cancel()
        conn.subs.clear()
        if conn in self._conns:
            self._conns.discard(conn)
            if not self._conns:
                self.idle_since = time.monotonic()

    # ------------------------------------------------------------------ for the headless broker

    async def busy(self) -> bool:
        """Tasks of this broker still need it (queued, running, or waiting for a reset);
        one still starting is busy."""
        return self._sup is None or self._sup.busy()


def is_state_event(event_json: dict[str, Any]) -> bool:
    return event_json.get("type") == str(EventType.STATE)


def _runtime_for(home: Path) -> Path:
    from baton.store.paths import runtime_dir

    return runtime_dir(home)


def _rid(err: p.RpcError) -> p.RequestId | None:
    data = err.data
    if isinstance(data, dict):
        rid = data.get("id")
        if isinstance(rid, str | int):
            return rid
    return None


def _quoted(exc: Exception) -> str:
    """The message of ``exc``: a bare KeyError's key without the quotes ``str`` adds."""
    if type(exc).__str__ is KeyError.__str__ and exc.args:
        return str(exc.args[0])
    return str(exc)


def _rate_limited() -> p.RpcError:
    return p.RpcError(p.RATE_LIMITED, "too many messages; slow down")


async def start_endpoint(
    sup: Supervisor,
    roots: list[str],
    *,
    headless: bool = False,
    limits: EndpointLimits | None = None,
    runtime: Path | None = None,
) -> Endpoint:
    """Listen on 127.0.0.1 (ephemeral port) for ``sup`` and write the discovery file.

    ``roots`` are the folders this broker serves (clients pick the broker by folder).
    Call :meth:`Endpoint.close` before closing the supervisor.
    """
    endpoint = Endpoint(sup, roots, headless=headless, limits=limits, runtime=runtime)
    await endpoint.start()
    return endpoint
