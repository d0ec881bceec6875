"""The ``targets`` of a delegate request (``[{path, start?, end?}]``), read and checked."""

from __future__ import annotations

from typing import Any

import baton.surfaces.ws.protocol as p
from baton.core.task import Target


def targets_of(value: Any) -> list[Target]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > 100:
        raise p.RpcError(p.INVALID_PARAMS, "targets: must be a list of {path, start?, end?}")
    out = []
    for item in value:
        if not isinstance(item, dict):
            raise p.RpcError(p.INVALID_PARAMS, "targets: each item is {path, start?, end?}")
        p.known(item, "path", "start", "end")
        path = p.nonempty(item, "path", limit=4096)
        start = p.integer(item, "start", lo=1)
        end = p.integer(item, "end", lo=1)
        if end is not None and (start is None or end < start):
            raise p.RpcError(p.INVALID_PARAMS, "targets: end needs a start and must be >= it")
        out.append(Target(path, start, end))
    return out
