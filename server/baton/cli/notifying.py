"""``baton watch --notify``: tell a terminal user when a watched task needs them.

For each notice of a task it watches (:mod:`baton.surfaces.desktop` says which events are
notices: input waiting, settled, budget) it rings the terminal's bell (on stderr) and sends
a desktop notification — unless the user's config turns on the broker's own desktop
notifications (``[notify] desktop``): then the broker sends them, for every task, and the
watch only rings, so no notice comes twice. The same batching as the broker's applies.

With ids it ends like ``watch`` (the first task to settle); with none it follows every task
until ``--timeout``, Ctrl-C or SIGTERM (exit 0, what waits sent first).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import time
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Any

from baton.cli.render import Output
from baton.surfaces.desktop import Batcher, Desktop, Notice, classify, notice_of
from baton.surfaces.ws.client import BrokerUnavailable, Client


def broker_sends() -> bool:
    """Whether the brokers send desktop notifications themselves (the user's config)."""
    from baton.config.layers import ConfigError
    from baton.config.settings import load_settings

    try:
        return load_settings(None).notify_desktop
    except ConfigError:
        return False  # a broken user config: no broker reads it either


class Notifier:
    """The watch's notices: looked up (the task's title), batched, rung and shown."""

    def __init__(self, c: Client, desktop: bool, *, quiet: float = 1.5) -> None:
        self.c = c
        self.desktop = Desktop() if desktop else None
        self.batcher = Batcher(self._show, quiet=quiet)
        self._titles: dict[str, str] = {}
        self._jobs: set[asyncio.Task[None]] = set()
        self.sent = 0

    async def _show(self, title: str, body: str) -> None:
        self.sent += 1
        sys.stderr.write("\a")
        sys.stderr.flush()
        if self.desktop is not None:
            await self.desktop.show(title, body)

    def consider(self, event_type: str, data: dict[str, Any], task_id: str) -> None:
        """Queue the notice a live event makes, if any (on the loop)."""
        if classify(event_type, data) is None:
            return
        self._spawn(self._add(event_type, data, task_id))

    async def _add(self, event_type: str, data: dict[str, Any], task_id: str) -> None:
        if task_id and task_id not in self._titles:
            try:
                line = (await self.c.call("get", id=task_id))["task"]
                self._titles[task_id] = str(line.get("title") or "")
            except Exception:
                self._titles[task_id] = ""
        notice = notice_of(event_type, data, task_id, self._titles.get(task_id, ""))
        if notice is not None:
            self.batcher.add(notice)

    def add(self, notice: Notice) -> None:
        self.batcher.add(notice)

    def _spawn(self, job: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(job)
        self._jobs.add(task)
        task.add_done_callback(self._jobs.discard)

    async def finish(self) -> None:
        """Send what waits (the watch ends)."""
        await asyncio.gather(*list(self._jobs), return_exceptions=True)
        await self.batcher.flush()


def live_hook(notifier: Notifier) -> Callable[[Any, bool], None]:
    """An ``on_event`` for :func:`~baton.surfaces.ws.client.events_until` that notices live
    events (not the replayed history)."""

    def hook(event: Any, history: bool) -> None:
        if not history:
            notifier.consider(str(event.type), event.data, event.task_id)

    return hook


async def follow_all(c: Client, notifier: Notifier, out: Output, timeout: float | None) -> int:
    """Every task's lifecycle lines and notices, until ``timeout``, Ctrl-C or SIGTERM."""
    res = await c.call("watch", replay=False)
    sid = res["subscription"]
    deadline = None if timeout is None else time.monotonic() + timeout
    with _stopped_by_signals() as stop:
        while not stop.is_set():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            msg = await _next(c, stop, left)
            if msg is _STOP:
                break
            if msg is None:
                raise BrokerUnavailable(c.closed_why())
            method, params = msg.get("method"), msg.get("params") or {}
            if method == "overflow":
                raise BrokerUnavailable("fell behind the broker's events; run the command again")
            if method in ("event", "events") and params.get("subscription") == sid:
                # Raw events: a type this client does not know yet is still a notice by name.
                for raw in params["events"] if method == "events" else [params["event"]]:
                    _line(out, raw)
                    notifier.consider(str(raw.get("type")), raw.get("data") or {}, raw["taskId"])
    await notifier.finish()
    return 0


#: What :func:`_next` returns when the watch is to end (its time is up, or a signal came).
_STOP: Any = object()


async def _next(c: Client, stop: asyncio.Event, left: float | None) -> Any:
    """The next notification, or :data:`_STOP` once ``stop`` is set or ``left`` is over."""
    got = asyncio.ensure_future(c.notifications.get())
    ended = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({got, ended}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
    finally:
        ended.cancel()
        if not got.done():
            got.cancel()  # a queue's get cancelled takes nothing from it
    return got.result() if got.done() and not got.cancelled() else _STOP


@contextlib.contextmanager
def _stopped_by_signals() -> Any:
    """An event set by SIGINT or SIGTERM while the block runs (their handlers then back)."""
    loop, stop = asyncio.get_running_loop(), asyncio.Event()
    caught = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
            caught.append(sig)
    try:
        yield stop
    finally:
        for sig in caught:
            loop.remove_signal_handler(sig)


def _line(out: Output, raw: dict[str, Any]) -> None:
    if raw.get("type") != "state":
        return
    d = raw.get("data") or {}
    if out.json_mode:  # one JSON object per line
        out.console.file.write(json.dumps(raw) + "\n")
        out.console.file.flush()
        return
    when = datetime.fromtimestamp(float(raw.get("ts") or 0)).strftime("%H:%M:%S")
    reason = f"  {d.get('reason')}" if d.get("reason") else ""
    out.console.print(
        f"{when} {raw.get('taskId')} {d.get('from') or '-'} → {d.get('to')}{reason}",
        markup=False,
        highlight=False,
    )
    out.console.file.flush()
