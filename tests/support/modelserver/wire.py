"""What every wire dialect shares: the reply to render, token usage, and a planned SSE stream."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from .script import Api, Tool, ToolArgs


@dataclass(frozen=True)
class ToolUse:
    """The model calls `tool` with `args` (a dict, or text for a freeform/custom tool)."""

    tool: Tool
    args: ToolArgs
    call_id: str


@dataclass(frozen=True)
class Text:
    """The model answers with text."""

    text: str


Reply = ToolUse | Text


@dataclass(frozen=True)
class Usage:
    """Token counts reported to the CLI (Claude computes its cost from them)."""

    input_tokens: int
    output_tokens: int

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class StreamPlan:
    """SSE frames of one streamed reply; `frames[:finish_at]` carry content but no finish."""

    frames: list[bytes]
    finish_at: int


class Dialect(Protocol):
    """One wire API (Anthropic Messages, OpenAI Responses, Chat Completions, Gemini)."""

    api: Api

    def tools(self, body: Mapping[str, Any]) -> list[Tool]:
        """The tools the request offers."""
        ...

    def stream(self, reply: Reply, model: str, usage: Usage) -> StreamPlan:
        """The SSE frames for `reply`."""
        ...

    def json(self, reply: Reply, model: str, usage: Usage) -> Any:
        """The non-streaming JSON answer for `reply`."""
        ...

    def error(self, status: int, message: str) -> Any:
        """The JSON error body this API uses for HTTP `status`."""
        ...


def sse(data: Any, event: str | None = None) -> bytes:
    """One SSE frame: an optional `event:` line and a `data:` line of compact JSON."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def new_id(prefix: str) -> str:
    """A random id with the API's customary prefix, e.g. `toolu_…`, `call_…`."""
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def halves(text: str) -> list[str]:
    """`text` split in two non-empty pieces when possible (so streams have several deltas)."""
    if len(text) < 2:
        return [text]
    mid = len(text) // 2
    return [text[:mid], text[mid:]]


def args_text(args: ToolArgs) -> str:
    """Tool arguments as the JSON (or freeform) text the APIs stream."""
    return args if isinstance(args, str) else json.dumps(args)


def sample_for_schema(schema: Mapping[str, Any]) -> Any:
    """A value that satisfies a simple JSON schema (used for structured-output side calls)."""
    kind = str(schema.get("type", "object")).lower()
    if schema.get("enum"):
        return schema["enum"][0]
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: sample_for_schema(sub) for name, sub in props.items()}
    if kind == "array":
        return [sample_for_schema(schema.get("items") or {"type": "string"})]
    if kind == "integer":
        return int(schema.get("minimum", 0)) + 1 if "minimum" in schema else 50
    if kind == "number":
        return 0.5
    if kind == "boolean":
        return False
    return "mock"
