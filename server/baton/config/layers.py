"""Config layers: which files hold Baton's settings, reading them, and where each key came from.

Layers, highest first: the project's ``.baton.toml`` (or ``[tool.baton]`` in its
``pyproject.toml``), the user's ``config.toml`` (``$BATON_CONFIG``, else
``$XDG_CONFIG_HOME/baton/config.toml``, else ``~/.config/baton/config.toml``), and built-in
defaults. A layer is read into flat ``(path tuple) → value`` items, each with its
:class:`Source` (file and line), so the merged settings can say where every value came from.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baton.errors import InvalidInput

PROJECT_FILE = ".baton.toml"
PYPROJECT = "pyproject.toml"
USER_FILE = "config.toml"

Key = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Source:
    """Where a setting came from: a layer, and the file and line when it was a file."""

    layer: str  # default | user | project
    path: str | None = None
    line: int | None = None
    note: str = ""  # for defaults: how the value was found

    def __str__(self) -> str:
        if self.path is None:
            return f"{self.layer}" + (f" ({self.note})" if self.note else "")
        where = self.path + (f":{self.line}" if self.line else "")
        return f"{self.layer} {where}"

    def to_json(self) -> dict[str, Any]:
        return {"layer": self.layer, "path": self.path, "line": self.line, "note": self.note}


class ConfigError(InvalidInput, ValueError):
    """A config file that cannot be read or holds a bad value; names the file and line."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None) -> None:
        self.message = message
        self.path = path
        self.line = line
        where = (path or "") + (f":{line}" if path and line else "")
        super().__init__(f"{where}: {message}" if where else message)


@dataclass(frozen=True, slots=True)
class Layer:
    """One file's settings, flattened, with the line of each key."""

    name: str  # user | project
    path: Path
    items: dict[Key, Any]
    lines: dict[Key, int]
    exists: bool = True

    def source(self, key: Key) -> Source:
        return Source(self.name, str(self.path), locate(self.lines, key))


def user_config_path() -> Path:
    """The user's config file (it may not exist)."""
    explicit = os.environ.get("BATON_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base / "baton" / USER_FILE


def project_config_path(root: Path) -> tuple[Path | None, list[Path]]:
    """The project file governing ``root`` and every folder looked in (for the watcher).

    Looks in ``root`` and its parents for ``.baton.toml``, then ``pyproject.toml`` with a
    ``[tool.baton]`` table; stops at the first folder holding ``.git`` (the repository's top).
    """
    looked: list[Path] = []
    folder = root.resolve()
    while True:
        looked.append(folder)
        candidate = folder / PROJECT_FILE
        if candidate.is_file():
            return candidate, looked
        pyproject = folder / PYPROJECT
        if pyproject.is_file() and _has_tool_baton(pyproject):
            return pyproject, looked
        if (folder / ".git").exists() or folder.parent == folder:
            return None, looked
        folder = folder.parent


def _has_tool_baton(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return False
    return re.search(r"^\s*\[\s*tool\.baton\s*[\].]", text, re.M) is not None


_AT_LINE = re.compile(r"\(at line (\d+), column \d+\)")


def read_layer(name: str, path: Path) -> Layer:
    """Read one config file; a missing file is an empty layer, a broken one a ConfigError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Layer(name, path, {}, {}, exists=False)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the file: {exc}", str(path)) from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = _AT_LINE.search(str(exc))
        line = int(m.group(1)) if m else None
        if line is None and "end of document" in str(exc):
            line = max(1, len(text.splitlines()))
        message = _AT_LINE.sub("", str(exc)).replace("(at end of document)", "").strip()
        raise ConfigError(f"not valid TOML: {message}", str(path), line) from exc
    prefix: Key = ()
    if path.name == PYPROJECT:
        tool = data.get("tool")
        data = tool.get("baton", {}) if isinstance(tool, dict) else {}
        if not isinstance(data, dict):
            raise ConfigError("[tool.baton] must be a table", str(path))
        prefix = ("tool", "baton")
    lines = key_lines(text, prefix)
    return Layer(name, path, dict(flatten(data)), lines)


#: Values kept whole (free-form tables handed to an adapter as they are): a profile's options,
#: the MCP servers it adds.
_WHOLE: tuple[tuple[str, ...], ...] = (
    ("profiles", "*", "options"),
    ("profiles", "*", "worker_mcp", "add"),
)


def _whole(key: Key) -> bool:
    return any(
        len(key) == len(p) and all(a == b or a == "*" for a, b in zip(p, key, strict=True))
        for p in _WHOLE
    )


def flatten(data: Mapping[str, Any], prefix: Key = ()) -> Iterator[tuple[Key, Any]]:
    """Leaves of nested tables as ``(path, value)``; lists and free-form tables stay whole."""
    for k, v in data.items():
        key = (*prefix, str(k))
        if isinstance(v, dict) and not _whole(key):
            yield from flatten(v, key)
            if not v:
                yield key, {}
        else:
            yield key, v


# -- where each key is written -------------------------------------------------------------------

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_ASSIGN = re.compile(
    r"""^\s*((?:[A-Za-z0-9_\-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_\-]+|"[^"]*"|'[^']*'))*)\s*="""
)
_PART = re.compile(r"""[A-Za-z0-9_\-]+|"([^"]*)"|'([^']*)'""")


def _parts(dotted: str) -> Key:
    out = []
    for m in _PART.finditer(dotted):
        out.append(m.group(1) if m.group(1) is not None else m.group(2) or m.group(0))
    return tuple(out)


def key_lines(text: str, prefix: Key = ()) -> dict[Key, int]:
    """The line (1-based) each key path is first written on; good enough for messages.

    Arrays of tables are numbered (``verify.0.name``); keys under ``prefix`` (``tool.baton``
    in pyproject.toml) lose it, keys outside it are dropped.
    """
    found: dict[Key, int] = {}
    table: Key = ()
    counts: dict[Key, int] = {}
    in_multiline = False
    for n, line in enumerate(text.splitlines(), start=1):
        if line.count('"""') % 2 or line.count("'''") % 2:
            in_multiline = not in_multiline
            if not in_multiline:
                continue
        if in_multiline:
            continue
        if h := _HEADER.match(line):
            table = _parts(h.group(2))
            if h.group(1) == "[[":
                found.setdefault(table, n)
                index = counts.get(table, 0)
                counts[table] = index + 1
                table = (*table, str(index))
            found.setdefault(table, n)
            continue
        if a := _ASSIGN.match(line):
            found.setdefault((*table, *_parts(a.group(1))), n)
    if not prefix:
        return found
    return {k[len(prefix) :]: v for k, v in found.items() if k[: len(prefix)] == prefix}


def locate(lines: Mapping[Key, int], key: Key) -> int | None:
    """The line of ``key``, or of its nearest written parent (inline tables, list items)."""
    for end in range(len(key), 0, -1):
        if key[:end] in lines:
            return lines[key[:end]]
    return None


def dotted(key: Key) -> str:
    """``("profiles", "a.b", "model")`` → ``profiles."a.b".model`` (TOML's own spelling)."""
    return ".".join(p if re.fullmatch(r"[A-Za-z0-9_\-]+", p) else f'"{p}"' for p in key)
