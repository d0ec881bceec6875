"""The broker's websocket endpoint (JSON-RPC 2.0 on 127.0.0.1), its discovery files, and the
client the ``baton`` CLI and the MCP bridge use to reach it.

A broker calls ``await start_endpoint(supervisor, roots)`` after starting its Supervisor and
``await endpoint.close()`` before closing it. See docs/reference/websocket.md for the
methods, notifications and error codes. (The endpoint is imported lazily: clients need only
the discovery and client modules, and start faster without the runtime.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from baton.surfaces.ws.discovery import Discovery, broker_for, live_brokers

if TYPE_CHECKING:
    from baton.surfaces.ws.endpoint import Endpoint, EndpointLimits, start_endpoint

__all__ = [
    "Discovery",
    "Endpoint",
    "EndpointLimits",
    "broker_for",
    "live_brokers",
    "start_endpoint",
]


def __getattr__(name: str) -> Any:
    if name in ("Endpoint", "EndpointLimits", "start_endpoint"):
        from baton.surfaces.ws import endpoint

        return getattr(endpoint, name)
    raise AttributeError(name)
