"""The broker's websocket endpoint (JSON-RPC 2.0 on 127.0.0.1), its discovery files, and the
client the ``baton`` CLI and the MCP bridge use to reach it.

See docs/reference/websocket.md for the methods, notifications and error codes.
"""

from baton.surfaces.ws.discovery import Discovery, broker_for, live_brokers
from baton.surfaces.ws.endpoint import Endpoint, EndpointLimits, start_endpoint

__all__ = [
    "Discovery",
    "Endpoint",
    "EndpointLimits",
    "broker_for",
    "live_brokers",
    "start_endpoint",
]
