"""A client of the broker's websocket: find (or start) the broker for a folder and call it.

Used by the ``baton`` CLI and the MCP bridge. :func:`connect_for` picks the broker whose
workspace roots hold the folder; with none it starts a headless one (``baton serve``,
detached, exiting when idle) under a file lock, so two commands started at once share one.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode
from websockets.protocol import State

import baton.surfaces.ws.discovery as discovery
from baton.errors import BatonError, Unavailable
from baton.store.paths import runtime_dir, state_home
from baton.surfaces.ws.discovery import Discovery

if TYPE_CHECKING:  # imported by the watching functions: a one-request command needs no events
    from baton.core.events import Event

#: Seconds an on-demand broker stays up with no clients and no running task.
DEFAULT_IDLE_EXIT = 60.0


class BrokerError(BatonError):
    """The broker answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class BrokerUnavailable(Unavailable):
    """No broker could be reached or started."""


class Client:
    """One authenticated connection: ``call`` requests, read pushed ``notifications``."""

    def __init__(self, ws: ClientConnection, info: Discovery) -> None:
        self.ws = ws
        self.info = info
        self.notifications: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def connect(cls, info: Discovery, *, timeout: float = 10.0) -> Client:
        try:
            ws = await connect(
                info.url,
                additional_headers={"Authorization": f"Bearer {info.token}"},
                max_size=None,
                open_timeout=timeout,
                compression=None,
                ping_interval=None,
            )
        except (OSError, TimeoutError) as exc:
            raise BrokerUnavailable(f"cannot reach the broker at {info.url}: {exc}") from exc
        return cls(ws, info)

    async def _read(self) -> None:
        try:
            async for frame in self.ws:
                msg = json.loads(frame)
                if "id" in msg and ("result" in msg or "error" in msg):
                    fut = self._waiting.pop(msg["id"], None)
                    if fut is None or fut.done():
                        continue
                    if "error" in msg:
                        err = msg["error"]
                        fut.set_exception(
                            BrokerError(int(err["code"]), str(err["message"]), err.get("data"))
                        )
                    else:
                        fut.set_result(msg["result"])
                else:
                    self.notifications.put_nowait(msg)
        except (ConnectionClosed, ValueError):
            pass
        finally:
            why = self.closed_why()
            for fut in self._waiting.values():
                if not fut.done():
                    fut.set_exception(BrokerUnavailable(why))
            self._waiting.clear()
            self.notifications.put_nowait(None)

    def closed_why(self) -> str:
        """What to tell the user about the connection's end (the broker's close code)."""
        code, reason = self.ws.close_code, self.ws.close_reason
        if code == CloseCode.MESSAGE_TOO_BIG:
            return f"the broker closed the connection: the request is too large ({reason})"
        if code == CloseCode.POLICY_VIOLATION and reason:
            return f"the broker closed the connection: {reason}"
        return "the broker closed the connection"

    async def call(self, method: str, **params: Any) -> Any:
        """Send a request and wait for its result (raises :class:`BrokerError`)."""
        rid = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[rid] = fut
        clean = {k: v for k, v in params.items() if v is not None}
        msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": clean}
        try:
            await self.ws.send(json.dumps(msg))
        except ConnectionClosed as exc:
            self._waiting.pop(rid, None)
            raise BrokerUnavailable(self.closed_why()) from exc
        return await fut

    async def close(self) -> None:
        # Closing a connection already closed aborts its transport once more, which some
        # Pythons (3.11) fail at when the transport closed after draining a large write.
        if self.ws.state is not State.CLOSED:
            await self.ws.close()
        with contextlib.suppress(Exception):
            await self._reader

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


# ------------------------------------------------------------------------------ watching


async def events_until(
    c: Client,
    task_ids: list[str],
    done: Callable[[str], bool],
    on_event: Callable[[Event, bool], None],
    timeout: float | None = None,
    wakes: Callable[[str], bool] | None = None,
) -> tuple[dict[str, str], str | None]:
    """Watch tasks (history first) until one is found where ``done(state)``, or moves while
    watched to a state where ``wakes(state)`` (default ``done``: a watch also wakes when a
    task enters ``rate_limited``, but does not return at once for one that already is).

    ``on_event(event, history)`` sees every event. Returns the latest state of each task and
    the id of the one that is done (None on timeout).
    """
    from baton.core.events import EventType

    woken = wakes or done
    res = await c.call("watch", ids=task_ids)
    sid = res["subscription"]
    replayed: dict[str, int] = res.get("replayed", {})
    states = {t["id"]: t["state"] for t in res["tasks"]}
    deadline = None if timeout is None else time.monotonic() + timeout
    ready = next((tid for tid, s in states.items() if done(s)), None)
    pending_history = {tid: seq for tid, seq in replayed.items() if seq > 0}
    while True:
        if ready is not None and not pending_history:
            return states, ready
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return states, None
        try:
            msg = await asyncio.wait_for(c.notifications.get(), left)
        except TimeoutError:
            return states, None
        if msg is None:
            raise BrokerUnavailable(c.closed_why())
        params = msg.get("params") or {}
        if msg.get("method") == "overflow":
            raise BrokerUnavailable("fell behind the broker's events; run the command again")
        if params.get("subscription") != sid:
            continue
        for event in events_of(msg):
            history = event.seq <= replayed.get(event.task_id, 0)
            if history and pending_history.get(event.task_id) == event.seq:
                del pending_history[event.task_id]
            on_event(event, history)
            if event.type == EventType.STATE and not history:
                to = str(event.data.get("to"))
                states[event.task_id] = to
                if ready is None and woken(to):
                    ready = event.task_id


def events_of(msg: dict[str, Any]) -> list[Event]:
    """The events an ``event`` or ``events`` notification carries (else none)."""
    from baton.core.events import Event

    params = msg.get("params") or {}
    if msg.get("method") == "event":
        return [Event.from_json(params["event"])]
    if msg.get("method") == "events":
        return [Event.from_json(e) for e in params["events"]]
    return []


# ------------------------------------------------------------------------------ finding


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


async def connect_for(
    folder: Path, *, start: bool = True, any_broker: bool = False, timeout: float = 20.0
) -> Client:
    """A client of the broker serving ``folder``; starts one on demand when none does.

    With ``any_broker`` (requests about a task by id: every broker of this state home can
    answer them) a running broker is used even when it serves other folders.
    """
    folder = folder.resolve()
    found = find_broker(folder)
    if found is None and any_broker:
        home = _home()
        others = discovery.live_brokers(runtime_dir(home), home=home)
        found = others[0] if others else None
    if found is not None:
        with contextlib.suppress(BrokerUnavailable):
            return await Client.connect(found)
    if not start:
        raise BrokerUnavailable(f"no broker serves {folder}; start one with: baton serve")
    info = await asyncio.to_thread(ensure_broker, folder, timeout)
    return await Client.connect(info)


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
