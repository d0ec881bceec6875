"""What a client of the broker's websocket can meet: an error answer, or no broker at all.

Kept apart from the clients so that both (the asyncio one and the blocking one) raise the
same classes and a caller catches them without importing either.
"""

from __future__ import annotations

from typing import Any

from baton.errors import BatonError, Unavailable


class BrokerError(BatonError):
    """The broker answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class BrokerUnavailable(Unavailable):
    """No broker could be reached or started."""
