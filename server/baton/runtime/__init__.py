"""The runtime: the supervisor that owns tasks, and the parts it is built from.

The surfaces use only the names below (loaded on first use, so importing
``baton.runtime.requests`` for a client does not import the supervisor).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baton.runtime.broker import Limits, TaskError, broker_alive
    from baton.runtime.requests import DelegateRequest, GraphNode
    from baton.runtime.supervisor import Supervisor

_HOME = {
    "Limits": "broker",
    "TaskError": "broker",
    "broker_alive": "broker",
    "DelegateRequest": "requests",
    "GraphNode": "requests",
    "Supervisor": "supervisor",
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'baton.runtime' has no attribute {name!r}")
    return getattr(importlib.import_module(f"baton.runtime.{module}"), name)


__all__ = ["DelegateRequest", "GraphNode", "Limits", "Supervisor", "TaskError", "broker_alive"]
