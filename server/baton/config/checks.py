"""Value checks for config keys: each returns the value (converted) or None when it is not
of the type the key wants. :mod:`baton.config.schema` names one per key."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from baton.core.groups import clock_time, zone


def string(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def nonempty(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def boolean(v: Any) -> bool | None:
    return v if isinstance(v, bool) else None


def count(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def positive(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def seconds(v: Any) -> float | None:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and v > 0
    return float(v) if ok else None


def amount(v: Any) -> float | None:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
    return float(v) if ok else None


def strings(v: Any) -> list[str] | None:
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return list(v)
    return None


def table(v: Any) -> dict[str, Any] | None:
    return dict(v) if isinstance(v, dict) else None


def tables(v: Any) -> list[Any] | None:
    return v if isinstance(v, list) else None


def some_of(choices: Iterable[str]) -> Callable[[Any], list[str] | None]:
    allowed = tuple(choices)
    return lambda v: v if isinstance(v, list) and all(x in allowed for x in v) else None


def one_of(choices: Iterable[str]) -> Callable[[Any], str | None]:
    allowed = tuple(choices)
    return lambda v: v if isinstance(v, str) and v in allowed else None


def clock(v: Any) -> str | None:
    """A time of day, ``HH:MM`` (24 h)."""
    return v if isinstance(v, str) and clock_time(v) is not None else None


def timezone_name(v: Any) -> str | None:
    """An IANA time zone this machine knows (``Europe/Paris``, ``UTC``)."""
    return v if isinstance(v, str) and zone(v) is not None else None
