"""What a scripted model server says: a `Script` is a list of turns, one per model request.

A turn is a `ToolCall` (a tool picked by name from the tools the request offers), an `Answer`
(final text), or a failure (`Unauthorized`, `RateLimit`, `ServerError`, `CutStream`, `NoFinish`,
`Dead`). Turns are consumed in order by *main* requests, i.e. requests that offer tools. Requests
without tools (OpenCode's title call, Gemini's router) are *side calls*: they get `Script.side_text`
and consume nothing, so a script only describes the agent loop.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

Api = Literal["anthropic", "responses", "chat", "gemini"]
ToolKind = Literal["function", "custom"]
ToolArgs = dict[str, Any] | str


@dataclass(frozen=True)
class Tool:
    """One tool a request offers: its name, kind (`custom` = freeform text input) and schema."""

    name: str
    kind: ToolKind = "function"
    schema: Mapping[str, Any] = field(default_factory=dict)

    @property
    def params(self) -> list[str]:
        """The parameter names of the tool's JSON schema (empty for custom tools)."""
        props = self.schema.get("properties")
        return list(props) if isinstance(props, dict) else []


@dataclass(frozen=True)
class CallContext:
    """What an argument function may look at: the API, the chosen tool and the request."""

    api: Api
    tool: Tool
    body: Mapping[str, Any]
    turn: int

    @property
    def cwd(self) -> Path | None:
        """The working directory the CLI reveals in its prompt, if one is found and exists."""
        return find_cwd(self.body)


ArgsFn = Callable[[CallContext], ToolArgs]


@dataclass(frozen=True)
class ToolCall:
    """Call the first tool of `names` the request offers, with `args` (or args computed from it)."""

    names: tuple[str, ...]
    args: ToolArgs | ArgsFn = field(default_factory=dict)

    def build(self, ctx: CallContext) -> ToolArgs:
        """The arguments for this call in the context of one request."""
        return self.args(ctx) if callable(self.args) else self.args


@dataclass(frozen=True)
class Answer:
    """A final text answer (finish reason `stop` / `end_turn`)."""

    text: str


@dataclass(frozen=True)
class Unauthorized:
    """Answer HTTP 401 to `times` consecutive main requests (None = every one from now on)."""

    times: int | None = 1
    message: str = "mock invalid api key"


@dataclass(frozen=True)
class RateLimit:
    """Answer HTTP 429 with `retry-after` and a reset time in the message and headers."""

    times: int | None = 1
    retry_after: int = 1
    reset_in: int = 3600
    message: str = "mock rate limited"

    def reset_at(self, now: datetime | None = None) -> datetime:
        """When the mock's limit resets (`reset_in` seconds from now, whole seconds, UTC)."""
        base = now or datetime.now(UTC)
        return (base + timedelta(seconds=self.reset_in)).replace(microsecond=0)

    def full_message(self, now: datetime | None = None) -> str:
        """The error message, carrying the reset time as ISO 8601 and as an epoch."""
        at = self.reset_at(now)
        return f"{self.message}; limit resets at {at.isoformat()} ({int(at.timestamp())})"


@dataclass(frozen=True)
class ServerError:
    """Answer HTTP 500 to `times` consecutive main requests."""

    times: int | None = 1
    message: str = "mock internal error"


@dataclass(frozen=True)
class CutStream:
    """Start a 200 SSE stream, send part of it, then reset the connection (no final chunk)."""

    times: int | None = 1
    text: str = "partial answer before the cut"
    cut_json: bool = (
        True  # also reset non-streaming requests (Claude's fallback) instead of answering
    )


@dataclass(frozen=True)
class NoFinish:
    """Send a stream that ends cleanly but without any finish reason / completion event."""

    times: int | None = 1
    text: str = "partial answer without finish"


@dataclass(frozen=True)
class Dead:
    """From this turn on, close every connection at once (RST) without answering."""


Failure = Unauthorized | RateLimit | ServerError | CutStream | NoFinish
Turn = ToolCall | Answer | Failure | Dead


@dataclass(frozen=True)
class Script:
    """The turns of one test, consumed in order by main requests."""

    turns: Sequence[Turn]
    side_text: str = "Mock title"
    exhausted_text: str = "(script exhausted)"
    #: The (input, output) tokens each main reply reports, and side replies (0, 0); None:
    #: estimated from the request's and the reply's sizes.
    usage: tuple[int, int] | None = None

    @classmethod
    def of(cls, *turns: Turn) -> Script:
        """`Script.of(write_file(...), Answer("done"))`."""
        return cls(tuple(turns))


# --- helpers that build common turns --------------------------------------------------------

WRITE_TOOLS = ("Write", "write", "write_file", "apply_patch")
PATH_PARAMS = ("file_path", "filePath", "path", "absolute_path")


def write_file(path: str | Path, content: str, names: Iterable[str] = WRITE_TOOLS) -> ToolCall:
    """A tool call that writes `content` to `path` with whatever write tool the CLI offers.

    A relative `path` is resolved against the cwd the CLI reveals in its prompt. For Codex's
    freeform `apply_patch` tool the input is an `*** Add File` patch.
    """

    def args(ctx: CallContext) -> ToolArgs:
        target = Path(path)
        if not target.is_absolute():
            cwd = ctx.cwd
            if cwd is None:
                raise LookupError("relative path but the request reveals no working directory")
            target = cwd / target
        if ctx.tool.kind == "custom":
            body = "".join(f"+{line}\n" for line in content.splitlines())
            return f"*** Begin Patch\n*** Add File: {target}\n{body}*** End Patch\n"
        key = next((p for p in PATH_PARAMS if p in ctx.tool.params), "file_path")
        return {key: str(target), "content": content}

    return ToolCall(tuple(names), args)


# --- finding the cwd in a request -----------------------------------------------------------

_CWD_PATTERNS = (
    re.compile(r"<cwd>\s*(/[^<\n]*?)\s*</cwd>"),  # Codex <environment_context>
    # Claude "Primary working directory:", OpenCode "Working directory:", Pi "Current working
    # directory:", Gemini "- **Workspace Directories:**\n  - /path"
    re.compile(r"(?:[Ww]orking directory|Workspace Directories):[\s*\-]*(/[^\s<>\"'`]+)"),
)


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def find_cwd(body: Mapping[str, Any]) -> Path | None:
    """The first existing directory a request names as its working directory."""
    for text in _strings(body):
        for pattern in _CWD_PATTERNS:
            for match in pattern.finditer(text):
                candidate = Path(match.group(1))
                if candidate.is_dir():
                    return candidate
    return None
