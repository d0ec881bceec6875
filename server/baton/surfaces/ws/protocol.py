"""JSON-RPC 2.0 as Baton's websocket speaks it: error codes, message checks, param readers.

Pure: no I/O. A frame is one JSON-RPC message (batches are refused). Requests carry an
``id``; a message with a string ``method`` and no ``id`` is a notification and is never
answered. Everything else that is malformed gets an error response with ``id`` null.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from baton.errors import NotFound, WrongState
from baton.surfaces.jsonrpc import INTERNAL_ERROR as INTERNAL_ERROR
from baton.surfaces.jsonrpc import INVALID_PARAMS as INVALID_PARAMS
from baton.surfaces.jsonrpc import INVALID_REQUEST as INVALID_REQUEST
from baton.surfaces.jsonrpc import METHOD_NOT_FOUND as METHOD_NOT_FOUND
from baton.surfaces.jsonrpc import PARSE_ERROR as PARSE_ERROR
from baton.surfaces.jsonrpc import RequestId as RequestId
from baton.surfaces.jsonrpc import RpcError as RpcError
from baton.surfaces.jsonrpc import valid_id as valid_id

# Baton's own (the -32000..-32099 server range).
UNAUTHORIZED = -32001
UNKNOWN_TASK = NotFound.code
WRONG_STATE = WrongState.code
RATE_LIMITED = -32004
BUSY = -32005
TOO_LARGE = -32006  # a message over the size limit; data: {size, limit} in bytes


@dataclass(frozen=True, slots=True)
class Request:
    """A well-formed request (``id`` set) or notification (``id`` None)."""

    method: str
    params: dict[str, Any]
    id: RequestId | None


def parse(frame: str | bytes) -> Request:
    """The request in one frame, or :class:`RpcError` saying what is wrong with it.

    The error's ``data`` holds the request id when one could be read, so the caller can
    answer it; otherwise the answer goes out with ``id`` null.
    """
    if isinstance(frame, bytes):
        raise RpcError(PARSE_ERROR, "binary frames are not accepted; send JSON as text")
    try:
        msg = json.loads(frame)
    except (ValueError, RecursionError):
        raise RpcError(PARSE_ERROR, "the frame is not valid JSON") from None
    if isinstance(msg, list):
        raise RpcError(INVALID_REQUEST, "batches are not supported; send one request per frame")
    if not isinstance(msg, dict):
        raise RpcError(INVALID_REQUEST, "a request is a JSON object")
    rid = msg.get("id")
    has_id = "id" in msg
    if has_id and not valid_id(rid):
        raise RpcError(INVALID_REQUEST, "id must be a string or an integer")
    answer_to = rid if valid_id(rid) else None
    if msg.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, 'jsonrpc must be "2.0"', {"id": answer_to})
    method = msg.get("method")
    if not isinstance(method, str) or not method:
        raise RpcError(INVALID_REQUEST, "method must be a non-empty string", {"id": answer_to})
    params = msg.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "params must be an object (by name)", {"id": answer_to})
    return Request(method, params, answer_to if has_id else None)


def amount(size: int) -> str:
    """A byte count as people read it: ``1 MiB``, ``4 KiB``, ``5.2 MiB``, ``900 bytes``."""
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            value = size / (1 << shift)
            return f"{value:.0f} {unit}" if value.is_integer() else f"{value:.1f} {unit}"
    return f"{size} bytes"


def too_large(frame: str | bytes, limit: int) -> RpcError | None:
    """The error for a message over ``limit`` bytes (UTF-8), or None when it fits."""
    size = len(frame)
    if size <= limit // 4:  # a character is at most 4 bytes
        return None
    if isinstance(frame, str) and not frame.isascii():
        size = len(frame.encode("utf-8", "surrogatepass"))
    if size <= limit:
        return None
    big, most = amount(size), amount(limit)
    if big.replace(".0 ", " ") == most:  # rounded alike: say it exactly
        big, most = f"{size} bytes", f"{limit} bytes"
    message = f"the request is {big}; the broker takes at most {most} per message"
    return RpcError(TOO_LARGE, message, {"size": size, "limit": limit})


def response(rid: RequestId | None, result: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}, default=str)


def error_response(rid: RequestId | None, err: RpcError) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "error": err.to_json()}, default=str)


def notification(method: str, params: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": params}, default=str)


# --------------------------------------------------------------------------- param readers


def _bad(name: str, what: str) -> RpcError:
    return RpcError(INVALID_PARAMS, f"{name}: {what}")


def known(params: dict[str, Any], *names: str) -> None:
    """Refuse params this method does not take (a typo should not be ignored silently)."""
    extra = sorted(set(params) - set(names))
    if extra:
        allowed = ", ".join(names) or "none"
        raise _bad(extra[0], f"unknown parameter; this method takes: {allowed}")


def text(params: dict[str, Any], name: str, *, required: bool = True, limit: int = 1 << 20) -> str:
    value = params.get(name)
    if value is None:
        if required:
            raise _bad(name, "required")
        return ""
    if not isinstance(value, str):
        raise _bad(name, "must be a string")
    if "\x00" in value:
        raise _bad(name, "must not contain NUL characters")
    if len(value) > limit:
        raise _bad(name, f"longer than {limit} characters")
    return value


def opt_text(params: dict[str, Any], name: str, limit: int = 4096) -> str | None:
    if params.get(name) is None:
        return None
    value = text(params, name, limit=limit)
    return value or None


def nonempty(params: dict[str, Any], name: str, limit: int = 1 << 20) -> str:
    value = text(params, name, limit=limit)
    if not value.strip():
        raise _bad(name, "must not be empty")
    return value


def texts(params: dict[str, Any], name: str, *, limit: int = 1000) -> list[str] | None:
    """A list of strings (a single string counts as a list of one); None when absent."""
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _bad(name, "must be a list of strings")
    if len(value) > limit:
        raise _bad(name, f"more than {limit} items")
    for v in value:
        if "\x00" in v or len(v) > 4096:
            raise _bad(name, "items must be short strings without NUL characters")
    return list(value)


def number(
    params: dict[str, Any], name: str, *, lo: float = 0.0, hi: float = math.inf
) -> float | None:
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(name, "must be a number")
    if not math.isfinite(value) or not lo <= value <= hi:
        raise _bad(name, f"must be between {lo:g} and {hi:g}")
    return float(value)


def integer(params: dict[str, Any], name: str, *, lo: int = 0, hi: int = 1 << 31) -> int | None:
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(name, "must be an integer")
    if not lo <= value <= hi:
        raise _bad(name, f"must be between {lo} and {hi}")
    return value


def flag(params: dict[str, Any], name: str, default: bool = False) -> bool:
    value = params.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _bad(name, "must be true or false")
    return value


def choice(params: dict[str, Any], name: str, options: tuple[str, ...], default: str) -> str:
    value = params.get(name)
    if value is None:
        return default
    if value not in options:
        raise _bad(name, f"must be one of: {', '.join(options)}")
    return str(value)
