"""The root of the errors Baton raises on purpose, and the few kinds callers act on.

Every error class of the package derives from :class:`BatonError`, so "something Baton
refused or could not do" is one ``except``; the kinds below say what a caller does about
it. An error keeps the built-in base it had (``ValueError``, ``KeyError``, ``OSError``, …)
beside its kind, so code that catches those still does.

``code`` is the JSON-RPC error code a surface answers a request with when the error ends
it (the websocket's codes: docs/reference/websocket.md); an error that carries a code of
its own (a surface's ``RpcError``) sets it per instance. Pure: imports nothing.
"""

from __future__ import annotations

#: JSON-RPC 2.0's own codes (``baton.surfaces.jsonrpc`` names them for the surfaces).
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class BatonError(Exception):
    """Something Baton refused or could not do; the message says what, and what to do."""

    code: int = INTERNAL_ERROR


class NotFound(BatonError):
    """The task a request names does not exist (or its id prefix names several)."""

    code = -32002


class WrongState(BatonError):
    """The request makes no sense in the task's current state (the message says what does)."""

    code = -32003


class InvalidInput(BatonError):
    """What the user, a request or a config file gave is wrong: fix the input, not Baton."""

    code = INVALID_PARAMS


class Unavailable(BatonError):
    """Something Baton needs is missing or refused here: an agent CLI, the keyring, the OS
    sandbox, a broker, an editor. The message says how to get it."""
