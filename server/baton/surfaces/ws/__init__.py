"""The broker's websocket endpoint (JSON-RPC 2.0 on 127.0.0.1), its discovery files, and the
client the ``baton`` CLI and the MCP bridge use to reach it.

A broker calls ``await start_endpoint(supervisor, roots)`` after starting its Supervisor and
``await endpoint.close()`` before closing it (the headless one, :mod:`baton.surfaces.ws.serve`,
listens first and attaches its Supervisor once started). See docs/reference/websocket.md for the
methods, notifications and error codes. (The names below are imported on first use: a
client needs only the discovery and client modules, and starts faster without the runtime;
the pure modules — protocol, answers, views — import nothing with I/O.)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baton.surfaces.ws.discovery import Discovery, broker_for, live_brokers
    from baton.surfaces.ws.endpoint import Endpoint, EndpointLimits, start_endpoint

_HOME = {
    "Discovery": "discovery",
    "broker_for": "discovery",
    "live_brokers": "discovery",
    "Endpoint": "endpoint",
    "EndpointLimits": "endpoint",
    "start_endpoint": "endpoint",
}

__all__ = [
    "Discovery",
    "Endpoint",
    "EndpointLimits",
    "broker_for",
    "live_brokers",
    "start_endpoint",
]


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'baton.surfaces.ws' has no attribute {name!r}")
    return getattr(importlib.import_module(f"baton.surfaces.ws.{module}"), name)
