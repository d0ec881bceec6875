"""Budgets and caps: what a task, a project or a profile may spend, and when that is reached.

Pure: no I/O, no clock (the caller passes the time).

A task's caps (:class:`Caps`: tokens, cost, steps — the agent's tool calls — and seconds of
its agent's running time) count over all of the task's attempts. They come from the config
(``[budget] task_*``, a profile's ``[profiles.NAME.budget] task_*`` over it, a model's
``[budget.models."MODEL"] task_*`` over that) and from the task itself (``--max-tokens`` …
on delegate or retry, kept in ``task.options["budget"]``), the most specific winning per
measure. A daily budget (tokens and cost) counts the attempts started since local midnight,
of one project folder (``[budget] day_*``) or of one profile in every project
(``[profiles.NAME.budget] day_*``).

:func:`breach` says which cap is reached; :func:`alerts` which of :data:`THRESHOLDS` a
daily budget has passed (the runtime says each once per day and scope).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

#: What a cap may count, in the order a breach is looked for.
MEASURES = ("tokens", "cost", "steps", "seconds")
#: The measures a daily budget counts.
DAY_MEASURES = ("tokens", "cost")
#: Percentages of a daily budget that raise an alert, once each per day and scope.
THRESHOLDS = (80, 90)
#: ``task.options`` key of a task's own caps (``--max-tokens`` … on delegate or retry).
OPTION = "budget"
#: The scopes of a cap.
TASK, PROJECT, PROFILE = "task", "project", "profile"


@dataclass(frozen=True, slots=True)
class Caps:
    """Limits per measure; None is no limit."""

    tokens: int | None = None
    cost: float | None = None
    steps: int | None = None
    seconds: float | None = None

    def over(self, other: Caps) -> Caps:
        """These caps with ``other``'s set measures put over them (the more specific wins)."""
        return replace(
            self,
            **{
                f.name: getattr(other, f.name)
                for f in fields(other)
                if getattr(other, f.name) is not None
            },
        )

    def limit(self, measure: str) -> float | None:
        value = getattr(self, measure)
        return None if value is None else float(value)

    @property
    def empty(self) -> bool:
        return all(getattr(self, m) is None for m in MEASURES)

    def to_json(self) -> dict[str, Any]:
        return {m: getattr(self, m) for m in MEASURES if getattr(self, m) is not None}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any] | None) -> Caps:
        if not isinstance(obj, Mapping):
            return cls()
        return cls(
            tokens=_whole(obj.get("tokens")),
            cost=_number(obj.get("cost")),
            steps=_whole(obj.get("steps")),
            seconds=_number(obj.get("seconds")),
        )


def _number(v: object) -> float | None:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
    return float(v) if ok else None  # type: ignore[arg-type]


def _whole(v: object) -> int | None:
    n = _number(v)
    return int(n) if n is not None else None


@dataclass(frozen=True, slots=True)
class Spent:
    """What was used, per measure."""

    tokens: int = 0
    cost: float = 0.0
    steps: int = 0
    seconds: float = 0.0

    def __add__(self, other: Spent) -> Spent:
        return Spent(
            self.tokens + other.tokens,
            self.cost + other.cost,
            self.steps + other.steps,
            self.seconds + other.seconds,
        )

    def used(self, measure: str) -> float:
        return float(getattr(self, measure))


@dataclass(frozen=True, slots=True)
class Breach:
    """A cap reached: by whom (``scope``, ``name``), of what, how much of how much."""

    scope: str  # task | project | profile
    name: str
    measure: str
    used: float
    limit: float
    day: str | None = None  # for a daily budget

    @property
    def message(self) -> str:
        what = {
            TASK: "the task's",
            PROJECT: "the project's daily",
            PROFILE: f"profile {self.name}'s daily",
        }[self.scope]
        used, limit = show(self.measure, self.used), show(self.measure, self.limit)
        return f"budget: {what} {self.measure} cap reached ({used} of {limit})"

    def to_json(self) -> dict[str, Any]:
        """The data of a ``budget`` event of kind ``stop``."""
        out: dict[str, Any] = {
            "kind": "stop",
            "scope": self.scope,
            "name": self.name,
            "measure": self.measure,
            "used": _round(self.measure, self.used),
            "limit": _round(self.measure, self.limit),
            "message": self.message,
        }
        if self.day:
            out["day"] = self.day
        return out


def show(measure: str, value: float) -> str:
    """``1200 tokens``, ``$0.0120``, ``3 steps``, ``61 s``."""
    match measure:
        case "cost":
            return f"${value:.4f}"
        case "seconds":
            return f"{value:.0f} s"
        case _:
            return f"{int(value)} {measure}"


def _round(measure: str, value: float) -> float | int:
    return round(value, 6) if measure == "cost" else int(value)


def breach(
    caps: Caps,
    spent: Spent,
    scope: str,
    name: str,
    *,
    starting: bool = False,
    day: str | None = None,
) -> Breach | None:
    """The first cap ``spent`` reached, or None. Tokens, cost and seconds are reached at the
    limit; steps past it (``steps = 3`` lets the agent make three tool calls). ``starting``:
    before an attempt starts, any measure at its limit is reached (nothing is left)."""
    for measure in MEASURES:
        limit = caps.limit(measure)
        if limit is None:
            continue
        used = spent.used(measure)
        over = used > limit if measure == "steps" and not starting else used >= limit
        if over:
            return Breach(scope, name, measure, used, limit, day)
    return None


def alerts(caps: Caps, spent: Spent) -> list[tuple[str, int]]:
    """``(measure, percent)`` for each of :data:`THRESHOLDS` a daily budget has passed."""
    out = []
    for measure in DAY_MEASURES:
        limit = caps.limit(measure)
        if not limit:
            continue
        share = spent.used(measure) / limit * 100
        out += [(measure, t) for t in THRESHOLDS if share >= t]
    return out


def alert_data(
    scope: str, name: str, day: str, measure: str, percent: int, used: float, limit: float
) -> dict[str, Any]:
    """The data of a ``budget`` event of kind ``alert``."""
    what = "the project's" if scope == PROJECT else f"profile {name}'s"
    return {
        "kind": "alert",
        "scope": scope,
        "name": name,
        "day": day,
        "measure": measure,
        "used": _round(measure, used),
        "limit": _round(measure, limit),
        "percent": percent,
        "message": f"budget: {what} daily {measure} at {percent} % "
        f"({show(measure, used)} of {show(measure, limit)} on {day})",
    }


def day_of(now: float) -> str:
    """The local date ``now`` falls on: ``2026-12-01``."""
    return time.strftime("%Y-%m-%d", time.localtime(now))


def day_start(now: float) -> float:
    """Local midnight before ``now``."""
    t = time.localtime(now)
    return time.mktime((t.tm_year, t.tm_mon, t.tm_mday, 0, 0, 0, 0, 0, -1))


def task_caps(options: Mapping[str, Any]) -> Caps:
    """The task's own caps (``task.options["budget"]``)."""
    found = options.get(OPTION)
    return Caps.from_json(found if isinstance(found, Mapping) else None)


def raise_caps(options: dict[str, Any], caps: Caps) -> Caps:
    """Put ``caps``'s set measures over the task's own; return the task's caps now."""
    merged = task_caps(options).over(caps)
    if merged.empty:
        options.pop(OPTION, None)
    else:
        options[OPTION] = merged.to_json()
    return merged
