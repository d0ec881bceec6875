"""Groups of accounts (``[groups.NAME]``): a cap on live tasks across all their accounts, a
shift window, and rate limits shared by the whole group.

A group takes in the accounts whose provider is ``provider`` and/or whose model contains
``model`` (case-insensitive), as a task runs them. Its ``max`` caps the tasks live at once
on all of them ("group alibaba is full (4/4 live)"); its shift (``from``/``to``, ``HH:MM``
in an IANA ``timezone``, crossing midnight when ``to`` is earlier) is when its accounts take
tasks, and ``grace`` seconds after a shift ends, work still running there is interrupted,
kept and resumable (``baton retry``); with ``shared_quota``, one account's rate limit cools
every account of the group down until the same time.

Pure: the runtime gives the time, the live counts and the cool-downs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")


def clock_time(text: str) -> tuple[int, int] | None:
    """``HH:MM`` as (hours, minutes), or None."""
    m = _HHMM.match(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def zone(name: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class Group:
    name: str
    provider: str | None = None
    model: str | None = None  # a substring of the model's name
    max: int | None = None  # live tasks at once, across its accounts
    shift_from: str | None = None  # HH:MM
    shift_to: str | None = None
    timezone: str = "UTC"
    grace: float = 0.0  # seconds after a shift's end before work still running stops
    shared_quota: bool = False

    def takes(self, provider: str, model: str | None) -> bool:
        """Whether an account of ``provider`` running ``model`` is in the group."""
        if self.provider is None and self.model is None:
            return False
        if self.provider is not None and provider != self.provider:
            return False
        return self.model is None or (model is not None and self.model.lower() in model.lower())

    @property
    def has_shift(self) -> bool:
        return self.shift_from is not None and self.shift_to is not None

    def _bounds(self, now: float) -> tuple[datetime, tuple[int, int], tuple[int, int]]:
        tz = zone(self.timezone) or ZoneInfo("UTC")
        start = clock_time(self.shift_from or "") or (0, 0)
        end = clock_time(self.shift_to or "") or (0, 0)
        return datetime.fromtimestamp(now, tz), start, end

    def on_shift(self, now: float) -> bool:
        """Whether ``now`` (a Unix time) is inside the shift (always, without one)."""
        if not self.has_shift:
            return True
        local, start, end = self._bounds(now)
        minute = local.hour * 60 + local.minute
        a, b = start[0] * 60 + start[1], end[0] * 60 + end[1]
        if a == b:
            return True
        return a <= minute < b if a < b else (minute >= a or minute < b)

    def last_end(self, now: float) -> float | None:
        """When the latest shift ended, at or before ``now`` (None without a shift)."""
        if not self.has_shift:
            return None
        local, _, end = self._bounds(now)
        cut = local.replace(hour=end[0], minute=end[1], second=0, microsecond=0)
        if cut > local:
            cut -= timedelta(days=1)
        return cut.timestamp()

    def stops_work(self, now: float) -> bool:
        """Whether work still running on the group's accounts must stop now: off shift, and
        more than ``grace`` seconds after the shift ended."""
        if self.on_shift(now):
            return False
        ended = self.last_end(now)
        return ended is not None and now - ended >= self.grace

    def shift_text(self) -> str:
        return f"{self.shift_from} to {self.shift_to} {self.timezone}"


def groups_of(groups: Iterable[Group], provider: str, model: str | None) -> list[Group]:
    return [g for g in groups if g.takes(provider, model)]


def closed(
    groups: Iterable[Group], provider: str, model: str | None, live: Mapping[str, int], now: float
) -> str | None:
    """Why an account of ``provider`` running ``model`` may not take a task now (naming the
    group), or None. ``live``: tasks live now per group."""
    for g in groups_of(groups, provider, model):
        if not g.on_shift(now):
            return f"group {g.name} is off shift (its shift is {g.shift_text()})"
        if g.max is not None and live.get(g.name, 0) >= g.max:
            return f"group {g.name} is full ({live.get(g.name, 0)}/{g.max} live)"
    return None


def shared_cooling(
    groups: Iterable[Group],
    members: Mapping[str, tuple[str, str | None]],
    cooling: Mapping[str, float],
) -> dict[str, float]:
    """``cooling`` (account → until) with each shared-quota group's latest cool-down given
    to all of its accounts. ``members``: account → (provider, model)."""
    out = dict(cooling)
    for g in groups:
        if not g.shared_quota:
            continue
        inside = [a for a, (prov, model) in members.items() if g.takes(prov, model)]
        until = max((cooling[a] for a in inside if a in cooling), default=None)
        if until is not None:
            for a in inside:
                out[a] = max(out.get(a, 0.0), until)
    return out
