"""Who may read the dashboard: one-time URL tokens, session cookies, CSRF tokens, and the
checks every request passes. Pure: no I/O, the clock passed in where it matters.

A client of the agents' websocket (it holds the broker's token) asks for a one-time token
(:meth:`Passes.issue`); the browser trades it once (:meth:`Passes.redeem`) for a session,
whose id travels in an HttpOnly, SameSite=Strict cookie and whose CSRF token the snapshot
hands the page for its ``POST``\\ s. A page framed by an editor (another site: no cookie
reaches it) trades the token for a *framed* session instead, whose id the page keeps in
memory and sends in :data:`SESSION_HEADER` (on the live socket, which takes no headers from a
browser, as a :data:`SESSION_PROTOCOL` subprotocol); a cookie never carries a framed session
nor the header a cookie's. :func:`check_request` refuses what is not the page's own:
a ``Host`` other than ``127.0.0.1:PORT`` (DNS rebinding), an ``Origin`` other than
``http://127.0.0.1:PORT`` (another site, ``null``), a method other than GET and POST.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from http import HTTPStatus
from http.cookies import CookieError, SimpleCookie

from websockets.datastructures import Headers

from baton.surfaces.ws.handshake import Refusal, same

#: Seconds a one-time token may wait to be traded for a cookie.
TOKEN_TTL = 120.0
#: Spent tokens remembered (to say "already used"); older ones are simply unknown.
_SPENT_KEPT = 1024
#: Sessions kept at once; a new one past this ends the oldest (its page must be opened again).
MAX_SESSIONS = 256
#: The header a ``POST`` carries the session's CSRF token in.
CSRF_HEADER = "X-Baton-CSRF"
#: The header a framed page's requests carry its session id in.
SESSION_HEADER = "X-Baton-Session"
#: The subprotocol a framed page's live socket asks for (the server answers with it) ...
SUBPROTOCOL = "baton.dashboard"
#: ... beside one made of this prefix and its session id (a browser's WebSocket can send no
#: header of its own; the subprotocols are the one it can).
SESSION_PROTOCOL = "baton.session."
METHODS = ("GET", "POST")


def cookie_name(port: int) -> str:
    """The session cookie's name: cookies ignore ports, so each broker's has its own."""
    return f"baton_dashboard_{port}"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


@dataclass(frozen=True, slots=True)
class Session:
    """A browser let in: the session's id (the cookie's value, or a framed page's
    :data:`SESSION_HEADER`) and the CSRF token its ``POST``\\ s carry."""

    id: str
    csrf: str
    created: float
    framed: bool = False


@dataclass
class Passes:
    """The one-time tokens handed out and the sessions they were traded for."""

    ttl: float = TOKEN_TTL
    _waiting: dict[str, float] = field(default_factory=dict)  # digest → expiry
    _spent: OrderedDict[str, None] = field(default_factory=OrderedDict)
    _sessions: OrderedDict[str, Session] = field(default_factory=OrderedDict)  # by id digest

    def issue(self, now: float | None = None) -> tuple[str, float]:
        """A new one-time token and when it expires."""
        now = time.time() if now is None else now
        self._forget_expired(now)
        token = secrets.token_urlsafe(32)
        expires = now + self.ttl
        self._waiting[_digest(token)] = expires
        return token, expires

    def redeem(
        self, token: str, now: float | None = None, *, framed: bool = False
    ) -> Session | None:
        """The new session ``token`` is traded for (``framed``: one for the header, not the
        cookie); None when it is unknown, expired or spent. A token is spent by its first
        try, whatever that try's outcome."""
        now = time.time() if now is None else now
        key = _digest(token)
        expires = self._waiting.pop(key, None)
        if expires is None:
            return None
        self._spent[key] = None
        while len(self._spent) > _SPENT_KEPT:
            self._spent.popitem(last=False)
        if expires < now:
            return None
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), now, framed)
        self._sessions[_digest(session.id)] = session
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return session

    def spent(self, token: str) -> bool:
        """Whether ``token`` was traded already (a replay)."""
        return _digest(token) in self._spent

    def session(self, given: str | None, *, framed: bool = False) -> Session | None:
        """The session whose id is ``given``: a cookie's value, or (``framed``) a framed
        page's header; a session is found only the way it was handed out."""
        if not given:
            return None
        found = self._sessions.get(_digest(given))
        if found is None or found.framed is not framed:
            return None
        return found if same(found.id, given) else None

    def _forget_expired(self, now: float) -> None:
        for key in [k for k, expires in self._waiting.items() if expires < now]:
            del self._waiting[key]


def cookie_of(headers: Headers, name: str) -> str | None:
    """The value of cookie ``name`` in the request's ``Cookie`` headers (None: absent or
    unreadable)."""
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load("; ".join(headers.get_all("Cookie")))
    except CookieError:
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


def framed_id(headers: Headers) -> str | None:
    """The framed session id a request carries: its :data:`SESSION_HEADER`, or on a live
    socket its ``baton.session.ID`` subprotocol. None when it carries neither (a cookie's
    request); "" when it carries one that cannot be right (several, or both ways), which no
    session matches."""
    given = [v.strip() for v in headers.get_all(SESSION_HEADER)]
    offered = [
        p.strip() for value in headers.get_all("Sec-WebSocket-Protocol") for p in value.split(",")
    ]
    given += [p[len(SESSION_PROTOCOL) :] for p in offered if p.startswith(SESSION_PROTOCOL)]
    if not given:
        return None
    return given[0] if len(given) == 1 else ""


def set_cookie(name: str, session: Session) -> str:
    """The ``Set-Cookie`` value that hands ``session`` to the browser: scripts cannot read
    it, no other site's request carries it, and it ends with the browser's session."""
    return f"{name}={session.id}; Path=/dashboard; HttpOnly; SameSite=Strict"


def check_request(headers: Headers, method: str, port: int) -> Refusal | None:
    """Why a request to the dashboard on ``port`` is refused before its cookie is looked
    at: a ``Host`` or ``Origin`` that is not the page's own, or a method it does not take."""
    hosts = headers.get_all("Host")
    if len(hosts) != 1:
        what = "no Host header" if not hosts else "more than one Host header"
        return Refusal(HTTPStatus.BAD_REQUEST, what)
    own = f"127.0.0.1:{port}"
    if hosts[0].strip() != own:
        return Refusal(HTTPStatus.FORBIDDEN, f"the Host header must be {own}")
    origins = headers.get_all("Origin")
    if origins and (len(origins) > 1 or origins[0].strip() != f"http://{own}"):
        return Refusal(HTTPStatus.FORBIDDEN, f"requests from another origin than http://{own}")
    if method not in METHODS:
        return Refusal(HTTPStatus.METHOD_NOT_ALLOWED, f"{method} is not answered here")
    return None


def check_csrf(headers: Headers, session: Session) -> Refusal | None:
    """Why a ``POST`` of ``session`` is refused: no CSRF token, or not the session's."""
    given = headers.get_all(CSRF_HEADER)
    if len(given) != 1 or not same(given[0].strip(), session.csrf):
        return Refusal(HTTPStatus.FORBIDDEN, f"a POST needs the {CSRF_HEADER} header of the page")
    return None
