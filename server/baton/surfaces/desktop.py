"""Desktop notifications: which task events make one, their text, and how they are sent.

A *notice* says that a task needs the user: it waits for input (a question, a permission
request: the task is in ``needs_input``), it settled (ready for review, answered, failed,
cancelled, interrupted), or a budget stopped it or is nearly spent. Which events are
notices, and of which kind, is said by name in the tables below (:data:`STATES`,
:data:`COMPLETIONS`, :data:`ALERTS`), so a new kind of event plugs in with one line and
works from both senders: the broker (:mod:`baton.surfaces.notices`, when ``[notify]
desktop`` is on) and ``baton watch --notify``. A task the user settled (applied, rejected)
is no notice, nor one they bring back out of a settled state (:data:`USERS_MOVES_FROM`).

Texts are cut (:data:`TITLE_LIMIT`, :data:`BODY_LIMIT`) and masked by the caller with the
task's secret values (:func:`masked`). Notices come out through a :class:`Batcher`: a burst
(twenty tasks settling at once) becomes one summary, and at most one notification goes out
per :attr:`Batcher.gap` seconds.

Sending: ``notify-send`` (libnotify's freedesktop client) on Linux and other Unixes,
``osascript`` on macOS, each as an argv list (never a shell string). The macOS script reads
the title and body from its arguments (``on run argv``), so no text is ever parsed as
AppleScript. With neither program found nothing is sent (logged once).

Standard library only: ``baton watch --notify`` imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from baton.core.masking import redact

log = logging.getLogger(__name__)

#: The kinds of notice, as ``[notify] on`` names them.
INPUT = "input"
SETTLED = "settled"
BUDGET = "budget"
KINDS = (INPUT, SETTLED, BUDGET)

#: A ``state`` event's new state → (kind, what the notice says).
STATES: dict[str, tuple[str, str]] = {
    "needs_input": (INPUT, "needs input"),
    "review": (SETTLED, "ready for review"),
    "answered": (SETTLED, "answered"),
    "failed": (SETTLED, "failed"),
    "cancelled": (SETTLED, "cancelled"),
    "interrupted": (SETTLED, "interrupted"),
}
#: A move out of these states is the user's doing (a reopened hunk, ``baton complete``, a
#: cancel of an interrupted task): no notice.
USERS_MOVES_FROM = frozenset(
    {"applied", "rejected", "answered", "failed", "cancelled", "interrupted"}
)
#: A ``state`` event's completion that makes it another kind (a task a budget stopped).
COMPLETIONS: dict[str, tuple[str, str]] = {
    "budget": (BUDGET, "stopped by its budget"),
}
#: Events that are notices by their type, ``TYPE.KIND`` for those whose ``data.kind`` says
#: more (a ``budget`` event of kind ``alert``: a daily budget passed 80 or 90 %; its kind
#: ``stop`` needs no entry, the ``state`` event with completion ``budget`` follows it):
#: name → (kind, what the notice says). A permission request needs none either: the task
#: moves to ``needs_input`` with it.
ALERTS: dict[str, tuple[str, str]] = {
    "budget.alert": (BUDGET, "budget alert"),
}

TITLE_LIMIT = 80
BODY_LIMIT = 240
#: Tasks a summary names before "…".
SUMMARY_NAMES = 3
APP = "Baton"


@dataclass(frozen=True, slots=True)
class Notice:
    """One notification's worth: what happened (``headline``) to which task."""

    kind: str
    headline: str  # "ready for review", "needs input", …
    task_id: str = ""
    task_title: str = ""
    detail: str = ""  # why: the state's reason, the question, the tool asking

    @property
    def title(self) -> str:
        return clip(f"{APP}: {self.headline}", TITLE_LIMIT)

    @property
    def body(self) -> str:
        name = self.task_title or self.task_id
        text = f"{name}: {self.detail}" if name and self.detail else name or self.detail
        return clip(text, BODY_LIMIT)


def classify(event_type: str, data: Mapping[str, Any]) -> tuple[str, str] | None:
    """The (kind, headline) of an event given by its type's name and its data, or None when
    it is no notice."""
    if event_type == "state":
        if data.get("from") in USERS_MOVES_FROM:
            return None
        found = COMPLETIONS.get(str(data.get("completion") or ""))
        if found is None:
            found = STATES.get(str(data.get("to") or ""))
        return found
    kind = data.get("kind")
    if isinstance(kind, str) and kind:
        return ALERTS.get(f"{event_type}.{kind}")
    return ALERTS.get(event_type)


def detail_of(event_type: str, data: Mapping[str, Any]) -> str:
    """What a notice of this event says after the task's name."""
    if event_type == "state":
        return str(data.get("reason") or "")
    if data.get("message") or data.get("text"):
        return str(data.get("message") or data.get("text"))
    if "percent" in data and "limit" in data:  # a budget alert
        measure = str(data.get("measure") or "")
        used, limit = data.get("used"), data.get("limit")
        amounts = f"{_amount(used, measure)} of {_amount(limit, measure)}"
        where = f"{data.get('scope') or ''} {data.get('name') or ''}".strip()
        return f"{data['percent']} % of today's {measure} budget ({amounts}), {where}"
    return ""


def _amount(value: Any, measure: str) -> str:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return str(value)
    return f"${value:.2f}" if measure == "cost" else f"{value:,}"


def notice_of(
    event_type: str, data: Mapping[str, Any], task_id: str = "", task_title: str = ""
) -> Notice | None:
    """The notice an event makes, or None."""
    found = classify(event_type, data)
    if found is None:
        return None
    kind, headline = found
    detail = detail_of(event_type, data)
    if detail.strip().lower() == headline:  # "ready for review" says nothing more
        detail = ""
    return Notice(kind, headline, task_id, task_title, detail)


def masked(notice: Notice, secrets: Iterable[str]) -> Notice:
    """``notice`` with every secret value masked in its texts."""
    values = list(secrets)
    if not values:
        return notice
    title, detail = redact([notice.task_title, notice.detail], values)
    return Notice(notice.kind, notice.headline, notice.task_id, title, detail)


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with "…"."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def summary(notices: Sequence[Notice]) -> tuple[str, str]:
    """The (title, body) of the one notification a batch becomes."""
    if len(notices) == 1:
        return notices[0].title, notices[0].body
    tasks = {n.task_id for n in notices if n.task_id}
    counts = Counter(n.headline for n in notices)
    what = ", ".join(f"{count} {headline}" for headline, count in counts.most_common())
    names = list(dict.fromkeys(n.task_title or n.task_id for n in notices if n.task_id))
    shown = "; ".join(names[:SUMMARY_NAMES]) + ("; …" if len(names) > SUMMARY_NAMES else "")
    head = f"{len(tasks)} tasks" if len(tasks) > 1 else f"{len(notices)} notices"
    return clip(f"{APP}: {head}", TITLE_LIMIT), clip(f"{what}. {shown}".strip(". "), BODY_LIMIT)


# -- sending ----------------------------------------------------------------------------------


def command(title: str, body: str, *, platform: str | None = None) -> list[str] | None:
    """The argv that shows a notification here, or None when no notifier is installed."""
    platform = platform or sys.platform
    if platform == "darwin":
        found = shutil.which("osascript")
        if found is None:
            return None
        # The texts are the script's arguments, never part of its source.
        script = [
            "on run argv",
            "display notification (item 2 of argv) with title (item 1 of argv)",
            "end run",
        ]
        return [found, *(a for line in script for a in ("-e", line)), title, body]
    found = shutil.which("notify-send")
    if found is None:
        return None
    # "--" ends the options: a body that begins with "-" is text, not an option.
    return [found, f"--app-name={APP}", "--", title, body]


class Desktop:
    """Shows notifications through the platform's notifier program."""

    def __init__(self, timeout: float = 10.0) -> None:
        self.timeout = timeout
        self._missing_said = False

    async def show(self, title: str, body: str) -> bool:
        """Show one notification; False when it could not be (no notifier, it failed)."""
        argv = command(title, body)
        if argv is None:
            if not self._missing_said:
                self._missing_said = True
                log.warning("no desktop notifier found (notify-send or osascript on PATH)")
            return False
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            log.warning("could not start %s: %s", argv[0], exc)
            return False
        try:
            _, err = await asyncio.wait_for(proc.communicate(), self.timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            log.warning("%s took over %g s; killed", argv[0], self.timeout)
            return False
        if proc.returncode != 0:
            tail = err.decode(errors="replace").strip()[-200:]
            log.warning("%s exited %s: %s", argv[0], proc.returncode, tail)
            return False
        return True


Show = Callable[[str, str], Awaitable[Any]]


class Batcher:
    """Sends notices as few notifications: a burst as one summary, at a bounded rate.

    A notice waits until none has come for ``quiet`` seconds (at most ``hold`` seconds after
    the first of its batch); the batch then goes out as one notification, and the next one
    no sooner than ``gap`` seconds later (what comes meanwhile is the next batch).
    """

    def __init__(
        self, show: Show, *, quiet: float = 1.5, hold: float = 10.0, gap: float = 5.0
    ) -> None:
        self.show = show
        self.quiet, self.hold, self.gap = quiet, hold, gap
        self._pending: list[Notice] = []
        self._runner: asyncio.Task[None] | None = None
        self._added = asyncio.Event()

    def add(self, notice: Notice) -> None:
        """Queue a notice (on the event loop); it goes out with its batch."""
        self._pending.append(notice)
        self._added.set()
        if self._runner is None or self._runner.done():
            self._runner = asyncio.get_running_loop().create_task(self._run(), name="notices")

    async def _run(self) -> None:
        while self._pending:
            first = time.monotonic()
            while True:
                self._added.clear()
                left = first + self.hold - time.monotonic()
                if left <= 0:
                    break
                try:
                    await asyncio.wait_for(self._added.wait(), min(self.quiet, left))
                except TimeoutError:
                    break  # quiet: the burst is over
            batch, self._pending = self._pending, []
            title, body = summary(batch)
            try:
                await self.show(title, body)
            except Exception:
                log.exception("could not show a notification")
            await asyncio.sleep(self.gap)

    async def flush(self) -> None:
        """Send what waits now, as one notification (a watch that ends)."""
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner
            self._runner = None
        if self._pending:
            batch, self._pending = self._pending, []
            title, body = summary(batch)
            with contextlib.suppress(Exception):
                await self.show(title, body)

    async def close(self) -> None:
        """Stop; notices still waiting are dropped."""
        self._pending.clear()
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner
            self._runner = None
