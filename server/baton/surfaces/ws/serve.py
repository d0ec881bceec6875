"""The headless broker (``baton serve``): a Supervisor plus its websocket endpoint.

It runs until SIGTERM/SIGINT, or — with ``idle_exit`` — once it has had no client and no
task of its own to supervise (queued, running, waiting for a rate-limit reset) for that many
seconds. Agents run detached, so they outlive it; the next broker adopts them.

A command that starts one on demand waits for it to listen, so it listens first: this module
imports no more than the endpoint needs, the socket opens and the discovery file is written
(``on_ready``), and only then are the settings and the runtime imported and the Supervisor
started (the database opened and migrated, accept journals finished, tasks of brokers that
are gone adopted). Requests that arrive meanwhile wait for that to end
(:meth:`Endpoint.started`); when the Supervisor cannot start they are answered with the
reason and the broker exits with it. tests/unit/test_startup_imports.py names what must not
be imported by the time it listens.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from baton.process.procfs import process_id
from baton.store.paths import state_home
from baton.surfaces.ws.endpoint import Endpoint

if TYPE_CHECKING:
    from baton.runtime import Supervisor
    from baton.surfaces.notices import DesktopNotices

CHECK_EVERY = 0.25
#: Seconds a broker whose Supervisor could not start goes on answering requests with the
#: reason (the command that started it connects meanwhile) before it exits.
FAILED_LINGER = 0.5


def broker_supervisor(home: Path) -> Supervisor:
    """The Supervisor of a real broker (``baton serve``, the language server).

    Its default worker comes from the settings: the user's ``default_worker``, else the best
    usable agent CLI found (``Settings.default_reason`` says which and why) — never the fake
    agent on its own (``demo`` and tests name it).
    """
    from baton.config.layers import ConfigError
    from baton.config.profiles import default_profiles
    from baton.config.settings import load_settings
    from baton.config.watch import SettingsCache
    from baton.runtime import Supervisor

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
    """Run a broker serving ``roots`` until stopped or idle; returns an exit code.

    ``on_ready`` is called once it listens (its discovery file written), before its
    Supervisor has started; a Supervisor that cannot start raises here, after the requests
    that waited for it were answered.
    """
    home = home if home is not None else state_home()
    endpoint = Endpoint(None, roots, headless=True, home=home, broker=process_id())
    sup: Supervisor | None = None
    notices: DesktopNotices | None = None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await endpoint.start()
        if on_ready is not None:
            on_ready(endpoint)
        try:
            # imported and built off the loop, which goes on taking connections meanwhile
            starting = await asyncio.to_thread(broker_supervisor, home)
            await starting.start()
        except Exception as exc:
            endpoint.fail(exc)
            await endpoint.linger(FAILED_LINGER)
            raise
        sup = starting
        endpoint.attach(sup)
        from baton.surfaces.notices import start_notices

        notices = start_notices(sup)  # desktop notifications, when the user turned them on
        quiet_since: float | None = None
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), CHECK_EVERY)
            if idle_exit is None:
                continue
            quiet = (
                endpoint.connections == 0
                and endpoint.dashboard_pages == 0  # a page open keeps it up
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
        await endpoint.close()
        if notices is not None:
            await notices.close()
        if sup is not None:
            await sup.close()
    return 0
