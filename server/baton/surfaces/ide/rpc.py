"""JSON-RPC 2.0 as Claude Code's IDE connection uses it: one message per text frame. Pure.

A frame is a request (``method`` and ``id``), a notification (``method``, no ``id``) or a
response to something we sent (``result`` or ``error``, no ``method``). Anything else is
malformed and answered with an error whose ``id`` is the request's when it could be read,
else null. Batches are refused (MCP dropped them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from baton.surfaces.jsonrpc import INTERNAL_ERROR as INTERNAL_ERROR
from baton.surfaces.jsonrpc import INVALID_PARAMS as INVALID_PARAMS
from baton.surfaces.jsonrpc import INVALID_REQUEST as INVALID_REQUEST
from baton.surfaces.jsonrpc import METHOD_NOT_FOUND as METHOD_NOT_FOUND
from baton.surfaces.jsonrpc import PARSE_ERROR as PARSE_ERROR
from baton.surfaces.jsonrpc import RequestId as RequestId
from baton.surfaces.jsonrpc import RpcError as RpcError
from baton.surfaces.jsonrpc import valid_id as valid_id

# The server range (-32000 .. -32099).
SERVER_ERROR = -32000
TIMED_OUT = -32001
BUSY = -32002


@dataclass(frozen=True, slots=True)
class Message:
    """A well-formed incoming message. ``method`` is None for a response to us."""

    method: str | None
    params: dict[str, Any]
    id: RequestId | None

    @property
    def is_request(self) -> bool:
        return self.method is not None and self.id is not None


def parse(frame: str | bytes) -> Message:
    """The message in one frame, or :class:`RpcError` saying what is wrong with it."""
    if isinstance(frame, bytes):
        raise RpcError(INVALID_REQUEST, "binary frames are not accepted; send JSON as text")
    try:
        msg = json.loads(frame)
    except (ValueError, RecursionError):
        raise RpcError(PARSE_ERROR, "the frame is not valid JSON") from None
    if isinstance(msg, list):
        raise RpcError(INVALID_REQUEST, "batches are not supported; send one message per frame")
    if not isinstance(msg, dict):
        raise RpcError(INVALID_REQUEST, "a message is a JSON object")
    rid = msg.get("id")
    has_id = "id" in msg and rid is not None
    if has_id and not valid_id(rid):
        raise RpcError(INVALID_REQUEST, "id must be a string or an integer")
    answer_to = rid if has_id else None
    if msg.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, 'jsonrpc must be "2.0"', rid=answer_to)
    method = msg.get("method")
    if method is None and ("result" in msg or "error" in msg):
        return Message(None, {}, answer_to)
    if not isinstance(method, str) or not method:
        raise RpcError(INVALID_REQUEST, "method must be a non-empty string", rid=answer_to)
    params = msg.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "params must be an object", rid=answer_to)
    return Message(method, params, answer_to)


def response(rid: RequestId | None, result: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "result": result})


def error_response(rid: RequestId | None, err: RpcError) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "error": err.to_json()})


def notification(method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": params})
