"""Writing a few top-level keys of a config file, the rest of it kept as it is.

``baton love`` sets (or clears) ``default_worker`` and ``default_model`` in the project's
file (``.baton.toml``, or the ``[tool.baton]`` table of ``pyproject.toml``) or the user's.
The edit is minimal and line based: a key's line is replaced in place, a new key goes after
the last key of its table (before the first table header, for a file of Baton's own), a
cleared key's line is removed; comments, order and every other line stay byte for byte.
Only simple one-line values are touched. The result is parsed again and must hold exactly
the wanted values, else nothing is written (:class:`ConfigError`: edit the file by hand).
The file is replaced atomically, keeping its mode.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from baton.config.layers import ConfigError

_HEADER = re.compile(r"^\s*\[")
_TOOL_BATON = re.compile(r"^\s*\[\s*tool\s*\.\s*baton\s*\]\s*(#.*)?$")


def set_keys(path: Path, values: Mapping[str, str | None], *, table: str | None = None) -> bool:
    """Set the top-level ``values`` (None: remove the key) in ``path`` — in its
    ``[tool.baton]`` table when ``table`` is ``"tool.baton"`` — creating the file if need be.
    Returns whether the file changed."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the file: {exc}", str(path)) from exc
    new = edited(text, values, table=table, where=str(path))
    if new == text:
        return False
    _replace(path, new)
    return True


def edited(
    text: str, values: Mapping[str, str | None], *, table: str | None = None, where: str = ""
) -> str:
    """``text`` with ``values`` set (see :func:`set_keys`); refused when the file does not
    parse, or the edit would not give exactly those values."""
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML, not changed: {exc}", where) from None
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    start, end = _region(lines, table)
    if start is None:  # pyproject.toml without [tool.baton]: a new table at its end
        wanted = {k: v for k, v in values.items() if v is not None}
        if not wanted:
            return text
        tail = ["\n"] if lines and lines[-1].strip() else []
        body = [f"{k} = {_value(v)}\n" for k, v in wanted.items()]
        lines += [*tail, "[tool.baton]\n", *body]
    else:
        for key, value in values.items():
            start, end = _set(lines, start, end, key, value)
    out = "".join(lines)
    _check(before, out, values, table, where)
    return out


def _region(lines: list[str], table: str | None) -> tuple[int | None, int]:
    """The lines ``[start, end)`` of the table's own keys (the top: before any header)."""
    if table is None:
        end = next((i for i, line in enumerate(lines) if _HEADER.match(line)), len(lines))
        return 0, end
    if table != "tool.baton":
        raise ValueError(f"only the top level or [tool.baton], not {table!r}")
    at = next((i for i, line in enumerate(lines) if _TOOL_BATON.match(line)), None)
    if at is None:
        return None, len(lines)
    end = next((i for i in range(at + 1, len(lines)) if _HEADER.match(lines[i])), len(lines))
    return at + 1, end


def _set(lines: list[str], start: int, end: int, key: str, value: str | None) -> tuple[int, int]:
    """Set one key in ``lines[start:end]``; returns the region's new bounds."""
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    found = next((i for i in range(start, end) if pattern.match(lines[i])), None)
    if found is not None:
        if value is None:
            del lines[found]
            return start, end - 1
        lines[found] = f"{key} = {_value(value)}\n"
        return start, end
    if value is None:
        return start, end
    # After the region's last non-blank, non-comment line (its last key), else at its start.
    last = next(
        (i for i in range(end - 1, start - 1, -1) if lines[i].strip() and not _comment(lines[i])),
        None,
    )
    at = start if last is None else last + 1
    lines.insert(at, f"{key} = {_value(value)}\n")
    return start, end + 1


def _comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def _value(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a TOML basic string


def _check(
    before: dict[str, Any],
    text: str,
    values: Mapping[str, str | None],
    table: str | None,
    where: str,
) -> None:
    try:
        after = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"could not edit it safely ({exc}); edit it by hand", where) from None
    got, had = _table(after, table), _table(before, table)
    for key, value in values.items():
        if got.get(key) != value:
            raise ConfigError(f"could not set {key} safely; edit it by hand", where)
    rest = {k: v for k, v in got.items() if k not in values}
    if rest != {k: v for k, v in had.items() if k not in values}:
        raise ConfigError("the edit would change other keys; edit it by hand", where)


def _table(data: dict[str, Any], table: str | None) -> dict[str, Any]:
    if table is None:
        return data
    tool = data.get("tool")
    found = tool.get("baton") if isinstance(tool, dict) else None
    return found if isinstance(found, dict) else {}


def _replace(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
