"""The headless broker (``baton serve``): a Supervisor plus its websocket endpoint.

It runs until SIGTERM/SIGINT, or — with ``idle_exit`` — once it has had no client and no
task of its own to supervise (queued, running, waiting for a rate-limit reset) for that many
seconds. Agents run detached, so they outlive it; the next broker adopts them.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable
from pathlib import Path

from baton.config.layers import ConfigError
from baton.config.profiles import default_profiles
from baton.config.settings import load_settings
from baton.config.watch import SettingsCache
from baton.runtime import Supervisor
from baton.store.paths import state_home
from baton.surfaces.ws.endpoint import Endpoint, start_endpoint

CHECK_EVERY = 0.25


def broker_supervisor(home: Path) -> Supervisor:
    """The Supervisor of a real broker (``baton serve``, the language server).

    Its default worker comes from the settings: the user's ``default_worker``, else the best
    usable agent CLI found (``Settings.default_reason`` says which and why) — never the fake
    agent on its own (``demo`` and tests name it).
    """
    profiles = default_profiles()
    cache = SettingsCache(profiles=profiles)
    try:
        default = load_settings(None, profiles=profiles).default_worker
    except ConfigError:
        default = ""  # a broken user file: each delegation reports it
    return Supervisor(home, profiles=profiles, default_worker=default, settings=cache)


async def serve(
    roots: list[str],
    *,
    idle_exit: float | None = None,
    home: Path | None = None,
    on_ready: Callable[[Endpoint], None] | None = None,
) -> int:
    """Run a broker serving ``roots`` until stopped or idle; returns an exit code."""
    sup = broker_supervisor(home if home is not None else state_home())
    await sup.start()
    endpoint: Endpoint | None = None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        endpoint = await start_endpoint(sup, roots, headless=True)
        if on_ready is not None:
            on_ready(endpoint)
        quiet_since: float | None = None
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), CHECK_EVERY)
            if idle_exit is None:
                continue
            quiet = (
                endpoint.connections == 0
                and endpoint.dashboard.connections == 0  # a page open keeps it up
                and not await endpoint.busy()
            )
            now = time.monotonic()
            if not quiet:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = now
            elif now - quiet_since >= idle_exit:
                break
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        if endpoint is not None:
            await endpoint.close()
        await sup.close()
    return 0
