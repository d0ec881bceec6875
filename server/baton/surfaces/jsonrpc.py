"""What every JSON-RPC 2.0 surface of Baton shares: the standard error codes and which
request ids are answered. Pure. Each surface adds its own server-range codes and parser
(``baton.surfaces.ws.protocol``, ``baton.surfaces.ide.rpc``)."""

from __future__ import annotations

from baton.errors import INTERNAL_ERROR as INTERNAL_ERROR
from baton.errors import INVALID_PARAMS as INVALID_PARAMS

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601

#: An id a request may carry: JSON-RPC allows strings and numbers (and null, which we refuse).
RequestId = str | int


def valid_id(value: object) -> bool:
    """A request id we answer: a string or an integer (not null, not a boolean)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
