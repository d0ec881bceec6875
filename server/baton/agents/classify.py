"""Error classification shared by every adapter: what kind of failure a CLI's message says.

Adapters first use the structured fields their CLI gives (HTTP status, error type): a status
decides before any text is read. This module turns the remaining free text into a completion
code, plus the retry-after and reset time of rate limits when the text carries them. Paths and
URLs in the text are never read as words (a ``429`` or ``auth`` in a folder name says nothing
about the error); :func:`structured_status` finds the status in a JSON error object a CLI
printed among its free text.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from baton.core.lifecycle import Completion


@dataclass(frozen=True, slots=True)
class Classified:
    kind: Completion
    retry_after: float | None = None  # seconds
    resets_at: float | None = None  # epoch seconds


_PATTERNS: list[tuple[Completion, re.Pattern[str]]] = [
    (
        Completion.BILLING,
        re.compile(
            r"insufficient[_ ]quota|billing|credit balance|payment required|\b402\b|"
            r"exceeded your current quota|out of credits",
            re.I,
        ),
    ),
    (
        Completion.RATE_LIMIT,
        re.compile(
            r"rate[_ -]?limit|\b429\b|too many requests|resource[_ ]exhausted|"
            r"usage limit|quota exceeded|overloaded|retry limit",
            re.I,
        ),
    ),
    (
        Completion.AUTH,
        re.compile(
            r"\b401\b|\b403\b|unauthori[sz]ed|invalid api key|invalid x-api-key|"
            r"authentication|not logged in|please (?:log ?in|login)|api key|forbidden",
            re.I,
        ),
    ),
    (
        Completion.MODEL_UNAVAILABLE,
        re.compile(
            r"model[^.]{0,40}(?:not found|does not exist|unavailable|not supported)|"
            r"unknown model|no such model|model_not_found",
            re.I,
        ),
    ),
    (
        Completion.MAX_TURNS,
        re.compile(r"max(?:imum)?[_ ]turns|turn limit|max_turns", re.I),
    ),
    (
        Completion.PERMISSION_DENIED,
        re.compile(r"permission denied|haven't granted|not permitted|requires approval", re.I),
    ),
    (
        Completion.NETWORK,
        re.compile(
            r"ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|connection (?:refused|reset|error)|"
            r"unable to connect|cannot connect|network|socket hang up|fetch failed|"
            r"stream (?:disconnected|closed)|socket connection was closed",
            re.I,
        ),
    ),
]

_RETRY_AFTER = re.compile(
    r"retry[- ]after[:= ]\s*(\d+(?:\.\d+)?)|"
    r"(?:try again|retry) in (\d+(?:\.\d+)?)\s*(s|sec|seconds?|m|min|minutes?|h|hours?)\b",
    re.I,
)
_RESETS_EPOCH = re.compile(r"reset[s]?[^0-9]{0,40}\((\d{9,11}(?:\.\d+)?)\)", re.I)
_RESETS_ISO = re.compile(
    r"reset[s]?(?: at)?[: ]\s*(\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)",
    re.I,
)
_UNIT = {"s": 1, "m": 60, "h": 3600}


#: A path or URL: something with a slash in it (``/tmp/x429/y``, ``./a``, ``http://h/v1``),
#: or a Windows path. Replaced by a blank before the words are read.
_PATHLIKE = re.compile(
    r"""(?:[A-Za-z]:\\|[A-Za-z][\w+.-]*://)?[^\s'"`()<>\[\]{},;]*[/\\][^\s'"`()<>\[\]{},;]*"""
)


def without_paths(text: str) -> str:
    """``text`` with every path and URL blanked out (so it is never matched as words)."""
    return _PATHLIKE.sub(" ", text)


def classify(text: str, *, status: int | None = None) -> Classified:
    """The completion code for an error message (and HTTP status, when the CLI gives one).

    The status decides first; then the text, read without its paths and URLs.
    """
    kind = _by_status(status) or _by_text(without_paths(text)) or Completion.WORKER_ERROR
    if kind != Completion.RATE_LIMIT:
        return Classified(kind)
    return Classified(kind, retry_after(text), resets_at(text))


def _by_status(status: int | None) -> Completion | None:
    match status:
        case 429:
            return Completion.RATE_LIMIT
        case 401 | 403:
            return Completion.AUTH
        case 402:
            return Completion.BILLING
        case 404:
            return Completion.MODEL_UNAVAILABLE
        case _:
            return None


def structured_status(text: str) -> int | None:
    """The HTTP status of the first JSON error object on a line of ``text`` (``{"error":
    {"code": 401, …}}``, ``{"status": 429}``, ``{"statusCode": 500}``), if any."""
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            found = _status_in(obj)
            if found is not None:
                return found
    return None


def _status_in(obj: dict[str, object]) -> int | None:
    for key in ("status", "statusCode", "code", "error_status", "api_error_status"):
        value = obj.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            return value
    for key in ("error", "data"):
        inner = obj.get(key)
        if isinstance(inner, dict):
            found = _status_in(inner)
            if found is not None:
                return found
    return None


def _by_text(text: str) -> Completion | None:
    for kind, pattern in _PATTERNS:
        if pattern.search(text):
            return kind
    return None


def retry_after(text: str) -> float | None:
    m = _RETRY_AFTER.search(text)
    if not m:
        return None
    if m.group(1):
        return float(m.group(1))
    return float(m.group(2)) * _UNIT[m.group(3)[0].lower()]


def resets_at(text: str, now: float | None = None) -> float | None:
    """An absolute reset time named in the text (epoch in parentheses, or ISO 8601)."""
    m = _RESETS_EPOCH.search(text)
    if m:
        return float(m.group(1))
    m = _RESETS_ISO.search(text)
    if m:
        stamp = m.group(1).replace("Z", "+00:00")
        try:
            parsed = datetime.fromisoformat(stamp)
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed.timestamp()
    ra = retry_after(text)
    if ra is not None:
        return (time.time() if now is None else now) + ra
    return None
