"""What the broker's websocket checks on the upgrade request, before any message. Pure.

In this order, each answered with a plain-text HTTP error and nothing logged but a line:

- an ``Origin`` header → 403: browsers always send one, agents never do (CVE-2025-52882);
- the ``Host`` header must name the loopback interface — ``localhost``, an address in
  127.0.0.0/8 or ``[::1]``, with or without a port — else 403: a web page that made its own
  name resolve to 127.0.0.1 (DNS rebinding) still sends that name. No ``Host``, several,
  or one that is not a host → 400;
- the token, ``Authorization: Bearer <token>`` or ``X-Baton-Token: <token>``: more than one
  of them → 400 (never a guess at which counts); a wrong one → 401. None is fine here: the
  connection then has to send ``auth`` first.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
from dataclasses import dataclass
from http import HTTPStatus

from websockets.datastructures import Headers

TOKEN_HEADER = "Authorization"
ALT_TOKEN_HEADER = "X-Baton-Token"

_PORT = re.compile(r"[0-9]{1,5}")


@dataclass(frozen=True, slots=True)
class Refusal:
    """An upgrade refused: the HTTP status and the one line of text sent with it."""

    status: HTTPStatus
    text: str


def check_upgrade(headers: Headers, token: str) -> Refusal | None:
    """Why the upgrade carrying ``headers`` is refused by a broker whose token is ``token``."""
    if "Origin" in headers:
        return Refusal(HTTPStatus.FORBIDDEN, "requests with an Origin header are refused")
    hosts = headers.get_all("Host")
    if len(hosts) != 1:
        what = "no Host header" if not hosts else "more than one Host header"
        return Refusal(HTTPStatus.BAD_REQUEST, what)
    name = host_name(hosts[0])
    if name is None:
        return Refusal(HTTPStatus.BAD_REQUEST, "the Host header is not a host")
    if not is_loopback(name):
        return Refusal(
            HTTPStatus.FORBIDDEN, "the Host header must be localhost, 127.0.0.1 or [::1]"
        )
    presented = headers.get_all(TOKEN_HEADER) + headers.get_all(ALT_TOKEN_HEADER)
    if len(presented) > 1:
        return Refusal(
            HTTPStatus.BAD_REQUEST, f"more than one token ({TOKEN_HEADER}, {ALT_TOKEN_HEADER})"
        )
    if presented and not same(_token_in(presented[0]), token):
        return Refusal(HTTPStatus.UNAUTHORIZED, "wrong token")
    return None


def token_of(headers: Headers) -> str | None:
    """The token presented on an upgrade that :func:`check_upgrade` let through."""
    presented = headers.get_all(TOKEN_HEADER) + headers.get_all(ALT_TOKEN_HEADER)
    return _token_in(presented[0]) if len(presented) == 1 else None


def _token_in(value: str) -> str:
    scheme, _, rest = value.strip().partition(" ")
    return rest.strip() if scheme.lower() == "bearer" else value.strip()


def same(a: str, b: str) -> bool:
    """Whether two tokens are equal, compared in constant time."""
    return hmac.compare_digest(a.encode("utf-8", "replace"), b.encode("utf-8", "replace"))


def host_name(value: str) -> str | None:
    """The host of a ``Host`` header value (``name``, ``name:port``, ``[v6]:port``)."""
    value = value.strip()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1 :]
        if rest and not (rest.startswith(":") and _port(rest[1:])):
            return None
        return name if ":" in name else None  # brackets hold an IPv6 address
    name, colon, port = value.partition(":")
    if colon and not _port(port):
        return None
    return name or None


def _port(text: str) -> bool:
    return bool(_PORT.fullmatch(text)) and int(text) <= 65535


def is_loopback(name: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    if name.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
