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


def names_or_all(v: Any) -> list[str] | None:
    """A list of names, or ``"*"`` (every one), as ``["*"]``."""
    return ["*"] if v == "*" else strings(v)


_STDIO_KEYS = frozenset({"command", "args", "env"})
_HTTP_KEYS = frozenset({"url", "headers"})


def _texts(v: Any) -> dict[str, str] | None:
    ok = isinstance(v, dict) and all(isinstance(x, str) for x in v.values())
    return {str(k): x for k, x in v.items()} if ok else None


def _mcp_server(v: Any) -> dict[str, Any] | None:
    if not isinstance(v, dict):
        return None
    keys = set(v)
    if isinstance(v.get("command"), str) and v["command"] and keys <= _STDIO_KEYS:
        args, env = strings(v.get("args", [])), _texts(v.get("env", {}))
        if args is None or env is None:
            return None
        return {"command": v["command"], "args": args, "env": env}
    if isinstance(v.get("url"), str) and v["url"] and keys <= _HTTP_KEYS:
        headers = _texts(v.get("headers", {}))
        return None if headers is None else {"url": v["url"], "headers": headers}
    return None


def mcp_servers(v: Any) -> dict[str, dict[str, Any]] | None:
    """MCP servers by name: each ``{command, args?, env?}`` (stdio) or ``{url, headers?}``."""
    if not isinstance(v, dict):
        return None
    out = {str(name): _mcp_server(server) for name, server in v.items()}
    return None if any(s is None for s in out.values()) else out  # type: ignore[return-value]
