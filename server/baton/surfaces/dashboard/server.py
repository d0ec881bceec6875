"""The dashboard's listener: plain HTTP and one websocket on a loopback port of its own.

The agents' websocket port stays as it is (every request with an ``Origin`` refused); this
second port, opened the first time a client of that websocket asks for the page
(:meth:`Dashboard.invite`), answers the browser. It is a websockets server whose
``process_request`` hook answers every plain request (:meth:`Dashboard._answer`) and lets
only ``/dashboard/live`` go on to the upgrade, each request checked by
:mod:`baton.surfaces.dashboard.auth` first. Requests carry no body (the server reads
none), so actions take their parameters in the query string. docs/reference/dashboard.md
is the contract.

Its wire logger never logs below INFO: websockets logs every header at DEBUG, and the
headers hold the sessions (``Cookie``, ``Set-Cookie``, ``X-Baton-Session``, the socket's
subprotocols).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import logging
import mimetypes
from collections.abc import Callable, Sequence
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

import baton.surfaces.dashboard.auth as auth
import baton.surfaces.dashboard.views as views
import baton.surfaces.ws.protocol as p
from baton.config.layers import ConfigError
from baton.core.events import Event
from baton.errors import NotFound
from baton.runtime import Supervisor
from baton.surfaces.dashboard.feed import Call, Feed
from baton.surfaces.dashboard.live import Live

log = logging.getLogger(__name__)
#: The listener's own logger (websockets'): INFO at most, so no header is ever logged.
wire = logging.getLogger(__name__ + ".wire")
wire.setLevel(logging.INFO)

#: The page's files (the page's build writes them; a placeholder ships).
STATIC = Path(__file__).resolve().parent / "static"
PREFIX = "/dashboard"
ACTIONS = ("accept", "reject", "cancel")
_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".json": "application/json",
    ".map": "application/json",
    ".woff2": "font/woff2",
}
_STATUS_OF = {
    p.UNKNOWN_TASK: HTTPStatus.NOT_FOUND,
    p.WRONG_STATE: HTTPStatus.CONFLICT,
    p.INVALID_PARAMS: HTTPStatus.BAD_REQUEST,
}


def select_subprotocol(
    conn: ServerConnection, offered: Sequence[Subprotocol]
) -> Subprotocol | None:
    """A framed page's live socket asks for :data:`auth.SUBPROTOCOL` (and sends its session
    id as another): answered with it; a cookie's socket asks for none and gets none."""
    return Subprotocol(auth.SUBPROTOCOL) if auth.SUBPROTOCOL in offered else None


def with_session(page: bytes, session: auth.Session) -> bytes:
    """``index.html`` for a framed page: its session id in ``<meta name="baton-session">``,
    which the page's script reads into memory and removes."""
    meta = f'<meta name="baton-session" content="{html.escape(session.id)}">'.encode()
    at = page.find(b"</head>")
    return page[:at] + meta + page[at:] if at >= 0 else meta + page


def actions_enabled() -> bool:
    """Whether the user's config turns the page's actions on (``[dashboard] actions``, a
    key only the user's file may set); a file that cannot be read keeps them off."""
    from baton.config.layers import read_layer, user_config_path
    from baton.config.schema import DASHBOARD_ACTIONS

    try:
        layer = read_layer("user", user_config_path())
    except ConfigError:
        return False
    return DASHBOARD_ACTIONS.check(layer.items.get(DASHBOARD_ACTIONS.path)) is True


class Dashboard:
    """One broker's dashboard: its listener, its sessions, its live pages."""

    def __init__(
        self,
        sup: Supervisor,
        call: Call,
        encode: Callable[[Event], str],
        *,
        static: Path = STATIC,
    ) -> None:
        self.sup = sup
        self.feed = Feed(sup, call)
        self.call = call
        self.static = static
        self.passes = auth.Passes()
        self.live = Live(encode, self.feed.rows_of, self.feed.task_and_events)
        self.port = 0
        self._server: Server | None = None
        self._starting = asyncio.Lock()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def connections(self) -> int:
        """Pages with their live socket open."""
        return len(self.live.pages)

    def stats(self) -> dict[str, Any]:
        """What ``health`` says of the dashboard: its port (0: not opened), open pages,
        frames written and the live job's time on the event loop."""
        return {"port": self.port, **self.live.stats()}

    async def invite(self) -> dict[str, Any]:
        """A one-time URL for the page (the listener opens on the first call)."""
        await self.start()
        token, expires = self.passes.issue()
        return {
            "url": f"{self.origin}{PREFIX}/?t={token}",
            "origin": self.origin,
            "port": self.port,
            "expires": expires,
            "actions": await asyncio.to_thread(actions_enabled),
        }

    async def start(self) -> None:
        async with self._starting:
            if self._server is not None:
                return
            self._server = await serve(
                self.live.serve,
                "127.0.0.1",
                0,
                process_request=self._answer,
                max_size=4096,  # a page sends nothing worth reading
                compression=None,
                server_header=None,
                open_timeout=60,
                select_subprotocol=select_subprotocol,
                logger=wire,
            )
            self.port = int(next(iter(self._server.sockets)).getsockname()[1])
            self.live.start()
            self.sup.listen_batches(self.live.on_commit)

    async def close(self) -> None:
        if self._server is None:
            return
        self.sup.unlisten_batches(self.live.on_commit)
        await self.live.close()
        self._server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 5.0)
        self._server = None

    # ------------------------------------------------------------------ requests

    async def _answer(self, conn: ServerConnection, request: Request) -> Response | None:
        try:
            return await self._route(request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("dashboard: %s %s failed", request.method, request.path)
            return self._text(HTTPStatus.INTERNAL_SERVER_ERROR, f"failed: {exc}")

    async def _route(self, request: Request) -> Response | None:
        headers = request.headers
        refused = auth.check_request(headers, request.method, self.port)
        if refused is not None:
            return self._text(refused.status, refused.text)
        url = urlsplit(request.path)
        path, query = url.path, parse_qs(url.query)
        if request.method == "GET" and path in (PREFIX, PREFIX + "/") and "t" in query:
            if "framed" in query:
                return await self._redeem_framed(query["t"][0])
            return self._redeem(query["t"][0])
        if request.method == "GET" and path.startswith(PREFIX + "/static/"):
            # The page's code: the same for everyone, no data in it (and no framed page
            # could load it otherwise: a <script src> carries no header).
            return await self._file(path[len(PREFIX + "/static/") :])
        framed = auth.framed_id(headers)
        if framed is not None:  # the header decides, whatever cookie comes along
            session = self.passes.session(framed, framed=True)
        else:
            session = self.passes.session(auth.cookie_of(headers, auth.cookie_name(self.port)))
        if session is None:
            return self._text(HTTPStatus.UNAUTHORIZED, "no dashboard session: run baton dashboard")
        if request.method == "POST":
            return await self._act(headers, session, path, query)
        if path == PREFIX + "/live":
            return None  # the websocket upgrade goes on
        if path == PREFIX:
            return self._response(HTTPStatus.PERMANENT_REDIRECT, b"", {"Location": PREFIX + "/"})
        if path == PREFIX + "/":
            return await self._file("index.html")
        api = PREFIX + "/api/"
        if path == api + "snapshot":
            window = self._window(query)
            if window is None:
                return self._bad_window()
            answer = await self.feed.snapshot(
                window, session.csrf, await asyncio.to_thread(actions_enabled)
            )
            return self._json(answer)
        if path == api + "export.csv":
            window = self._window(query)
            if window is None:
                return self._bad_window()
            body = (await self.feed.csv(window)).encode()
            return self._response(
                HTTPStatus.OK,
                body,
                {
                    "Content-Type": "text/csv; charset=utf-8",
                    "Content-Disposition": f'attachment; filename="baton-tasks-{window}.csv"',
                },
            )
        if path.startswith(api + "tasks/") and path.count("/") == 4:
            try:
                return self._json(await self.feed.detail(path.rsplit("/", 1)[1]))
            except NotFound as exc:
                return self._text(HTTPStatus.NOT_FOUND, str(exc))
        return self._text(HTTPStatus.NOT_FOUND, f"nothing at {path}")

    def _redeem(self, token: str) -> Response:
        spent = self.passes.spent(token)
        session = self.passes.redeem(token)
        if session is None:
            what = "this link was used already" if spent else "unknown or expired link"
            return self._text(HTTPStatus.FORBIDDEN, f"{what}: run baton dashboard again")
        cookie = auth.set_cookie(auth.cookie_name(self.port), session)
        return self._response(
            HTTPStatus.SEE_OTHER, b"", {"Location": PREFIX + "/", "Set-Cookie": cookie}
        )

    async def _redeem_framed(self, token: str) -> Response:
        """A framed page's link: answered with the page itself, its session id inside (no
        cookie, no redirect: the id goes nowhere but into the page's memory)."""
        spent = self.passes.spent(token)
        session = self.passes.redeem(token, framed=True)
        if session is None:
            what = "this link was used already" if spent else "unknown or expired link"
            return self._text(HTTPStatus.FORBIDDEN, f"{what}: open the dashboard again")
        page = await self._read("index.html")
        if page is None:
            return self._text(HTTPStatus.NOT_FOUND, "no file index.html")
        body = with_session(page[0], session)
        return self._response(HTTPStatus.OK, body, {"Content-Type": page[1]})

    async def _act(
        self, headers: Headers, session: auth.Session, path: str, query: dict[str, list[str]]
    ) -> Response:
        refused = auth.check_csrf(headers, session)
        if refused is not None:
            return self._text(refused.status, refused.text)
        if not await asyncio.to_thread(actions_enabled):
            return self._text(
                HTTPStatus.FORBIDDEN, "the dashboard's actions are off ([dashboard] actions)"
            )
        parts = path.split("/")  # "", "dashboard", "api", "tasks", ID, ACTION
        if len(parts) != 6 or parts[2:4] != ["api", "tasks"] or parts[5] not in ACTIONS:
            return self._text(HTTPStatus.NOT_FOUND, f"no action at {path}")
        params: dict[str, Any] = {"id": parts[4]}
        hunks = [h for v in query.get("hunks", []) for h in v.split(",") if h]
        if hunks and parts[5] != "cancel":
            params["hunks"] = hunks
        try:
            return self._json(await self.call(parts[5], params))
        except p.RpcError as err:
            status = _STATUS_OF.get(err.code, HTTPStatus.INTERNAL_SERVER_ERROR)
            body: dict[str, Any] = {"error": err.message}
            if isinstance(err.data, dict) and "next" in err.data:
                body["next"] = err.data["next"]
            return self._json(body, status)

    # ------------------------------------------------------------------ answers

    @staticmethod
    def _window(query: dict[str, list[str]]) -> str | None:
        window = query.get("window", [views.DEFAULT_WINDOW])[0]
        return window if window in views.WINDOWS else None

    def _bad_window(self) -> Response:
        return self._text(HTTPStatus.BAD_REQUEST, f"window: one of {', '.join(views.WINDOWS)}")

    async def _read(self, name: str) -> tuple[bytes, str] | None:
        """The static file ``name`` and its type (None: no such file in the folder)."""
        root = self.static.resolve()
        target = (root / name).resolve()
        if root not in target.parents or not await asyncio.to_thread(target.is_file):
            return None
        body = await asyncio.to_thread(target.read_bytes)
        kind = _TYPES.get(target.suffix) or mimetypes.guess_type(target.name)[0]
        return body, kind or "application/octet-stream"

    async def _file(self, name: str) -> Response:
        found = await self._read(name)
        if found is None:
            return self._text(HTTPStatus.NOT_FOUND, f"no file {name}")
        extra = {"Content-Type": found[1]}
        page = found[1].startswith("text/html")  # the cookie's page: never in a frame
        if not page:  # scripts, styles: the page's origin only
            extra["Cross-Origin-Resource-Policy"] = "same-origin"
        return self._response(HTTPStatus.OK, found[0], extra, unframed=page)

    def _json(self, obj: Any, status: HTTPStatus = HTTPStatus.OK) -> Response:
        body = json.dumps(obj, default=str, separators=(",", ":")).encode()
        return self._response(status, body, {"Content-Type": "application/json"})

    def _text(self, status: HTTPStatus, text: str) -> Response:
        body = (text + "\n").encode()
        return self._response(status, body, {"Content-Type": "text/plain; charset=utf-8"})

    def _response(
        self, status: HTTPStatus, body: bytes, extra: dict[str, str], *, unframed: bool = False
    ) -> Response:
        """An answer with the page's security headers; ``unframed``: no frame may hold it —
        the cookie's page, which another page on 127.0.0.1 (the same site, whatever its
        port) could otherwise frame, with the cookie, to trick clicks. The framed link's
        page (the editor's panel frames it) and answers with nothing to click stay
        framable."""
        frames = {"X-Frame-Options": "DENY"} if unframed else {}
        headers = Headers(
            {
                **frames,
                "Content-Length": str(len(body)),
                "Connection": "close",
                "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer",
                "Content-Security-Policy": (
                    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                    f"img-src 'self' data:; connect-src 'self' ws://127.0.0.1:{self.port}; "
                    "object-src 'none'; base-uri 'none'; form-action 'self'"
                    + ("; frame-ancestors 'none'" if unframed else "")
                ),
                **extra,
            }
        )
        return Response(int(status), status.phrase, headers, body)
