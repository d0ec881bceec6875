"""Finding the broker that serves a folder, or starting a headless one for it.

Shared by the asyncio client (:mod:`baton.surfaces.ws.client`) and the blocking one
(:mod:`baton.surfaces.ws.blocking`); it imports neither websockets nor asyncio.
:func:`ensure_broker` starts ``baton serve`` detached (exiting when idle) under a file lock, so
two commands started at once share one broker.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

from baton.store.paths import runtime_dir, state_home
from baton.surfaces.ws import discovery
from baton.surfaces.ws.discovery import Discovery
from baton.surfaces.ws.errors import BrokerUnavailable

#: Seconds an on-demand broker stays up with no clients and no running task.
DEFAULT_IDLE_EXIT = 60.0


def _home() -> Path:
    return state_home().resolve()


def find_broker(folder: Path) -> Discovery | None:
    """The live broker serving ``folder`` for this state home, if any."""
    home = _home()
    return discovery.broker_for(folder.resolve(), runtime_dir(home), home=home)


def broker_by_pid(pid: int) -> Discovery | None:
    home = _home()
    for rec in discovery.live_brokers(runtime_dir(home), home=home):
        if rec.pid == pid:
            return rec
    return None


def idle_exit_default() -> float:
    value = os.environ.get("BATON_IDLE_EXIT", "")
    try:
        return float(value) if value else DEFAULT_IDLE_EXIT
    except ValueError:
        return DEFAULT_IDLE_EXIT


def any_broker_for(folder: Path, *, any_broker: bool = False) -> Discovery | None:
    """The broker serving ``folder``; with ``any_broker`` (requests about a task by id: every
    broker of this state home can answer them) any live broker when none serves it."""
    found = find_broker(folder)
    if found is None and any_broker:
        home = _home()
        others = discovery.live_brokers(runtime_dir(home), home=home)
        found = others[0] if others else None
    return found


def ensure_broker(folder: Path, timeout: float = 20.0) -> Discovery:
    """Find the broker for ``folder`` or start a headless one and wait for its discovery file.

    Holds a lock in the runtime folder so that commands started together start one broker.
    """
    home = _home()
    run = runtime_dir(home)
    with open(run / ".spawn.lock", "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            found = discovery.broker_for(folder, run, home=home)
            if found is not None:
                return found
            root = discovery.project_root(folder)
            return _spawn_and_wait(root, run, home, timeout)
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _spawn_and_wait(root: Path, run: Path, home: Path, timeout: float) -> Discovery:
    argv = [
        sys.executable,
        "-m",
        "baton.cli",
        "serve",
        "--root",
        str(root),
        "--idle-exit",
        str(idle_exit_default()),
    ]
    log_path = run / "serve.log"
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            env={**os.environ, "BATON_HOME": str(home)},
            cwd=str(root),
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for rec in discovery.live_brokers(run, home=home):
            if rec.pid == proc.pid:
                return rec
        if proc.poll() is not None:
            tail = _tail(log_path)
            raise BrokerUnavailable(f"the broker exited at start ({proc.returncode}): {tail}")
        time.sleep(0.02)
    raise BrokerUnavailable(f"the broker did not start within {timeout:.0f} s; see {log_path}")


def _tail(path: Path, size: int = 800) -> str:
    try:
        data = path.read_bytes()[-size:]
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip()
