"""The websocket's methods as a machine-readable schema (OpenRPC 1.3, ``methods.openrpc.json``).

The file ships in the package beside this module; ``baton ws-schema`` prints it. A test keeps
its methods and their parameters equal to what the broker registers and accepts.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

#: Methods the connection itself answers, before (``auth``) or besides the method table
#: (``dashboard``: the endpoint's page, see docs/reference/dashboard.md).
SESSION_METHODS = ("auth", "watch", "subscribe", "unsubscribe", "dashboard")


def text() -> str:
    """The schema document as shipped."""
    return resources.files("baton.surfaces.ws").joinpath("methods.openrpc.json").read_text()


def load() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(text())
    return doc
