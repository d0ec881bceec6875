"""Masking secret values in what agents print and write: whole, cut anywhere, or in pieces.

A value is found where it appears whole, and also with whitespace between its characters —
line breaks or spaces, as ``fold -w 8`` or printing it in pieces leaves it, or their JSON
escapes (``\\n``, ``\\r``, ``\\t``) as a JSON stream carries them — up to :data:`GAP` of them
in each gap. What matches is replaced by :data:`MASK`, its line breaks kept (a folded secret
becomes one mask per line), so a text keeps its lines. A value holding whitespace or a
backslash itself is found only whole. Values shorter than :data:`MIN_LENGTH` are not masked
(they would blot out ordinary words); each value's JSON-escaped form is masked too.

:class:`StreamMasker` masks a stream of text cut anywhere (the chunks of an output pipe, the
deltas of a text stream). It holds back the end of what it was given while that end could be
the beginning of a secret, and remembers the end of what it let out, so that the rest of a
secret whose first characters went out is still masked when it comes.

Standard library only: the process wrapper (:mod:`baton.process.wrap`) imports this module
to write an agent's output files, and must start fast. The wrapper learns the values from
the environment it shares with the agent: :data:`MASK_ENV` names the variables holding them
(:func:`values_from_env`), so the values themselves are never written anywhere.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

MASK = "********"
#: The variable naming (comma-separated) the variables that hold secrets, for the wrapper.
MASK_ENV = "BATON_MASK_ENV"
#: Shorter values are not masked.
MIN_LENGTH = 6
#: Whitespace characters (or their JSON escapes) allowed between two characters of a value.
GAP = 8
#: A beginning of a secret at least this long is held back through a pause (and masked at
#: the end of a stream); a shorter one is let out at a pause.
STRONG = 4

_GAP_CHARS = " \t\r\n"
_ESCAPES = "nrt"  # \n \r \t in a JSON string
_GAP_RE = r"(?:[ \t\r\n]|\\[nrt]){0," + str(GAP) + "}"
_LINES = re.compile(r"[^\r\n]+")

T = TypeVar("T")


def prepare(values: Iterable[str]) -> tuple[str, ...]:
    """The values to look for: long enough ones, with their JSON-escaped forms, longest first."""
    return _prepared(tuple(values))


@functools.lru_cache(maxsize=128)
def _prepared(values: tuple[str, ...]) -> tuple[str, ...]:
    out: set[str] = set()
    for value in values:
        if not isinstance(value, str) or len(value) < MIN_LENGTH:
            continue
        out.add(value)
        for ascii_only in (False, True):
            out.add(json.dumps(value, ensure_ascii=ascii_only)[1:-1])
    return tuple(sorted(out, key=lambda v: (-len(v), v)))


def values_from_env(environ: Mapping[str, str]) -> list[str]:
    """The values of the variables :data:`MASK_ENV` names (empty or missing ones left out)."""
    names = [n.strip() for n in environ.get(MASK_ENV, "").split(",")]
    return [environ[n] for n in names if n and environ.get(n)]


def _gappable(value: str) -> bool:
    return not any(c in _GAP_CHARS or c == "\\" for c in value)


def _pattern(value: str) -> str:
    if not _gappable(value):
        return re.escape(value)
    return _GAP_RE.join(re.escape(c) for c in value)


@functools.lru_cache(maxsize=128)
def _compiled(values: tuple[str, ...]) -> re.Pattern[str] | None:
    return re.compile("|".join(_pattern(v) for v in values)) if values else None


def _reach(value: str) -> int:
    """The longest text a match of ``value`` can span."""
    return len(value) + (len(value) - 1) * GAP * 2 if _gappable(value) else len(value)


def cover(text: str) -> str:
    """``text`` masked, its line breaks kept: each run between them becomes :data:`MASK`."""
    return _LINES.sub(MASK, text)


def mask_text(text: str, values: Iterable[str]) -> str:
    """``text`` with every value masked where it appears (whole or with gaps)."""
    return _mask(text, _compiled(prepare(values)))


def _mask(text: str, found: re.Pattern[str] | None) -> str:
    if found is None or not text:
        return text
    return found.sub(lambda m: cover(m.group()), text)


def redact(obj: T, values: Iterable[str]) -> T:
    """``obj`` (str, list, dict, nested) with every value masked in its strings."""
    found = _compiled(prepare(values))
    return obj if found is None else _redact(obj, found)


def _redact(obj: Any, found: re.Pattern[str]) -> Any:
    if isinstance(obj, str):
        return _mask(obj, found)
    if isinstance(obj, list):
        return [_redact(x, found) for x in obj]
    if isinstance(obj, dict):
        return {k: _redact(v, found) for k, v in obj.items()}
    return obj


def _beginning(text: str, start: int, value: str) -> tuple[int, int] | None:
    """If ``text`` from ``start`` on is a beginning of ``value`` (gaps allowed) that the text
    ends in: the number of its characters matched and the index just past the last of them."""
    gappable = _gappable(value)
    i, q, gap, end = 0, start, 0, start
    while True:
        if i == len(value):
            return None  # a whole match: the pattern finds those
        if q == len(text):
            return (i, end) if i else None
        c = text[q]
        if c == value[i]:
            i, q, gap, end = i + 1, q + 1, 0, q + 1
        elif not i or not gappable or gap >= GAP:
            return None
        elif c in _GAP_CHARS:
            q, gap = q + 1, gap + 1
        elif c == "\\":
            if q + 1 == len(text):
                return i, end  # an escape cut in two: it may still be a gap
            if text[q + 1] not in _ESCAPES:
                return None
            q, gap = q + 2, gap + 1
        else:
            return None


class StreamMasker:
    """Masks the values in a stream of text cut anywhere (see the module's docstring).

    :meth:`push` gives what can be let out now. A beginning of a secret of at least
    ``hold_from`` characters is held back until the stream tells whether the secret follows:
    1 (the default) holds any, for text whose timing matters little (an agent's text
    deltas); the process wrapper, whose lines must reach the broker at once, holds from
    :data:`STRONG` on, and a line that merely ends like a secret begins is not delayed.
    :meth:`pause` lets out a held beginning shorter than :data:`STRONG` (another kind of
    event came: likely the end of a word); :meth:`flush` ends the stream, masking a held
    beginning of :data:`STRONG` characters or more. Whatever was let out is remembered, so
    the rest of a secret whose first characters went out is masked when it comes.
    """

    def __init__(self, values: Iterable[str], *, hold_from: int = 1) -> None:
        self.values = prepare(values)
        self.hold_from = max(1, hold_from)
        self._pattern = _compiled(self.values)
        self._window = max((_reach(v) for v in self.values), default=0)
        firsts = "".join(re.escape(c) for c in sorted({v[0] for v in self.values}))
        self._firsts = re.compile(f"[{firsts}]" if firsts else "(?!)")
        self._context = ""  # the end of what was let out
        self._held = ""  # the beginning of a secret, maybe
        self._matched = 0  # how many of a secret's characters the held text has
        self._held_end = 0  # in the held text, just past the last of them

    @property
    def held(self) -> str:
        return self._held

    def push(self, text: str) -> str:
        """Take the next piece of the stream; return what may be let out now."""
        if self._pattern is None:
            return text
        text = self._held + text
        full = self._context + text
        base = len(self._context)
        out: list[str] = []
        pos = base  # in ``full``, the first character not yet let out
        after = 0  # just past the last match
        for m in self._pattern.finditer(full):
            a, b = m.span()
            after = b
            if b <= base:
                continue  # let out (masked) before
            start = max(a, base)
            out += [full[pos:start], cover(full[start:b])]
            pos = b
        hold, matched, held_end = len(full), 0, len(full)
        for first in self._firsts.finditer(full, max(after, len(full) - self._window)):
            p = first.start()
            best = max(
                (found for v in self.values if (found := _beginning(full, p, v)) is not None),
                default=None,
            )
            if best is not None and best[0] >= self.hold_from:
                hold, (matched, held_end) = max(p, pos), best
                break
        out.append(full[pos:hold])
        shown = "".join(out)
        self._held = full[hold:]
        self._matched = matched
        self._held_end = max(0, held_end - hold)
        self._remember(shown)
        return shown

    def pause(self) -> str:
        """Let out a held beginning shorter than :data:`STRONG` characters of a secret."""
        if not self._held or self._matched >= STRONG:
            return ""
        return self._let_out(self._held)

    def flush(self) -> str:
        """End of the stream: what is held, a beginning of a secret masked if long enough."""
        if not self._held:
            return ""
        held = self._held
        if self._matched >= STRONG:
            held = cover(held[: self._held_end]) + held[self._held_end :]
        return self._let_out(held)

    def _let_out(self, text: str) -> str:
        self._held, self._matched, self._held_end = "", 0, 0
        self._remember(text)
        return text

    def _remember(self, shown: str) -> None:
        if self._window:
            self._context = (self._context + shown)[-self._window :]


__all__ = [
    "GAP",
    "MASK",
    "MASK_ENV",
    "MIN_LENGTH",
    "STRONG",
    "StreamMasker",
    "cover",
    "mask_text",
    "prepare",
    "redact",
    "values_from_env",
]
