"""What every JSON-RPC 2.0 surface of Baton shares: the standard error codes, the error a
surface answers with (:class:`RpcError`), and which request ids are answered. Pure. Each
surface adds its own server-range codes and parser (``baton.surfaces.ws.protocol``,
``baton.surfaces.ide.rpc``)."""

from __future__ import annotations

from typing import Any

from baton.errors import INTERNAL_ERROR as INTERNAL_ERROR
from baton.errors import INVALID_PARAMS as INVALID_PARAMS
from baton.errors import BatonError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601

#: An id a request may carry: JSON-RPC allows strings and numbers (and null, which we refuse).
RequestId = str | int


def valid_id(value: object) -> bool:
    """A request id we answer: a string or an integer (not null, not a boolean)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class RpcError(BatonError):
    """An error to send back as a JSON-RPC error object: its code (set per instance), its
    message, the ``data`` member when there is one, and ``rid``, the id to answer when the
    malformed message that caused it had a readable one."""

    def __init__(
        self, code: int, message: str, data: Any = None, *, rid: RequestId | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.rid = rid

    def to_json(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err
