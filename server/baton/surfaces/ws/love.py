"""The broker's ``love``: the default worker (and model) for work that names none, shown, set
for a project (or the user), or cleared — what ``baton love`` does, for the editors.

Part of the method table of :class:`baton.surfaces.ws.methods.Methods`; the file written and
the edit are :mod:`baton.config.defaults_file`'s.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import baton.surfaces.ws.protocol as p
from baton.config import defaults_file
from baton.config.layers import ConfigError


class Defaults:
    """``love``, for one broker (the folders it serves: the default ``root``)."""

    def __init__(self, roots: list[str]) -> None:
        self.roots = roots

    async def love(self, params: dict[str, Any]) -> dict[str, Any]:
        """``{worker?, model?, clear?, global?, root?}``: without ``worker`` or ``clear``,
        the default in effect ``{default, model, reason}``; else also
        ``{file, changed, set}``."""
        p.known(params, "worker", "model", "clear", "global", "root")
        return await _love(params, self.roots)


async def _love(params: dict[str, Any], roots: list[str]) -> dict[str, Any]:
    root_text = p.opt_text(params, "root") or (roots[0] if roots else None)
    if root_text is None:
        raise p.RpcError(p.INVALID_PARAMS, "root: required (this broker serves no folder)")
    root = Path(root_text).expanduser().resolve()
    worker, model = p.opt_text(params, "worker", 200), p.opt_text(params, "model", 200)
    clear, user = p.flag(params, "clear"), p.flag(params, "global")
    if clear and worker is not None:
        raise p.RpcError(p.INVALID_PARAMS, "clear: give a worker or clear, not both")
    if model is not None and worker is None:
        raise p.RpcError(p.INVALID_PARAMS, "model: needs a worker")
    try:
        if worker is None and not clear:
            return await asyncio.to_thread(defaults_file.in_effect, root)
        return await asyncio.to_thread(defaults_file.choose, root, worker, model, user=user)
    except defaults_file.UnknownWorker as exc:
        raise p.RpcError(p.INVALID_PARAMS, f"worker: {exc}") from None
    except ConfigError as exc:
        raise p.RpcError(p.INVALID_PARAMS, f"Baton's settings: {exc}") from None
