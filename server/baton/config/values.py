"""Reading the merged config layers through the schema: type checks whose errors name the
file and line, unknown keys, and keys a project may not set (:class:`Values`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from baton.config.layers import ConfigError, Key, Source, dotted, locate
from baton.config.schema import FIELDS, Field, matches, unknown
from baton.config.trust import refusal

T = TypeVar("T")


class Values:
    """The merged items, read with type checks whose errors name the file and line."""

    def __init__(
        self,
        items: dict[Key, tuple[Any, Source]],
        lines: Mapping[str, Mapping[Key, int]],
        below: Mapping[Key, tuple[Any, Source]] | None = None,
    ) -> None:
        self.items = items
        self.lines = lines  # file → where each key is written
        self.below = below if below is not None else {}  # the items under the project's

    def fail(self, key: Key, message: str) -> ConfigError:
        src = self.items[key][1] if key in self.items else None
        line = src.line if src else None
        if src is None:  # a table: name the file of what is under it, and its header's line
            below = [k for k in self.items if k[: len(key)] == key]
            src = self.items[below[-1]][1] if below else None
            line = locate(self.lines.get(src.path or "", {}), key) if src else None
        return ConfigError(f"{dotted(key)}: {message}", src.path if src else None, line)

    def has(self, key: Key) -> bool:
        return key in self.items

    def children(self, key: Key) -> list[str]:
        """Names one level below ``key`` (profile names, kinds, …), in file order."""
        seen: dict[str, None] = {}
        for k in self.items:
            if len(k) > len(key) and k[: len(key)] == key:
                seen.setdefault(k[len(key)], None)
        return list(seen)

    def get(self, key: Key, check: Callable[[Any], T | None], want: str, default: T) -> T:
        if key not in self.items:
            if any(k[: len(key)] == key for k in self.items):
                raise self.fail(key, f"must be {want}, not a table")
            return default
        value = self.items[key][0]
        out = check(value)
        if out is None:
            raise self.fail(key, f"must be {want}, not {_show(value)}")
        return out

    def field(self, f: Field[T], *names: str) -> T:
        """The value of ``f`` (its user-chosen parts filled in by ``names``), or its default."""
        return self.get(f.key(*names), f.check, f.want, f.value)

    def check_keys(self) -> None:
        """Every key is in the table, and a project's file sets none that are user-only or
        that :func:`baton.config.trust.refusal` refuses."""
        for key, (value, src) in self.items.items():
            bad = unknown(key)
            if bad is not None:
                raise self.fail(*bad)
            if src.layer != "project":
                continue
            for f in FIELDS:
                if f.user_only and _sets(f.path, key, value):
                    inside = ".".join(f.path[len(key) - 1 :]) if len(f.path) > len(key) else ""
                    what = f"{inside} may" if inside else "may"
                    raise self.fail(
                        key, f"{what} only be set in your user config, not in a project"
                    )
            refused = refusal(key, value, self.items, self.below, FIELDS)
            if refused is not None:
                raise self.fail(*refused)


def _sets(path: Key, key: Key, value: Any) -> bool:
    """Whether the item ``key = value`` sets ``path`` (itself, or inside a table kept whole)."""
    if len(key) > len(path):
        return matches(path, key[: len(path)])
    if not matches(path[: len(key)], key):
        return False
    for part in path[len(key) :]:
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    return True


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
