"""Anthropic Messages API (`POST /v1/messages`), as Claude Code streams it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .script import Api, Tool
from .wire import Reply, StreamPlan, Text, ToolUse, Usage, halves, new_id, sse

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
}


class AnthropicMessages:
    """Renders replies as Anthropic `message_start … message_stop` SSE or a JSON message."""

    api: Api = "anthropic"

    def tools(self, body: Mapping[str, Any]) -> list[Tool]:
        return [
            Tool(name=str(t["name"]), schema=t.get("input_schema") or {})
            for t in body.get("tools") or []
            if isinstance(t, dict) and "name" in t
        ]

    def _content(self, reply: Reply) -> dict[str, Any]:
        if isinstance(reply, ToolUse):
            args = reply.args if isinstance(reply.args, dict) else {"input": reply.args}
            return {"type": "tool_use", "id": reply.call_id, "name": reply.tool.name, "input": args}
        return {"type": "text", "text": reply.text}

    @staticmethod
    def _stop_reason(reply: Reply) -> str:
        return "tool_use" if isinstance(reply, ToolUse) else "end_turn"

    def stream(self, reply: Reply, model: str, usage: Usage) -> StreamPlan:
        start = {
            "type": "message_start",
            "message": {
                "id": new_id("msg_"),
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": usage.input_tokens, "output_tokens": 1},
            },
        }
        frames = [sse(start, "message_start"), sse({"type": "ping"}, "ping")]
        if isinstance(reply, ToolUse):
            block = {**self._content(reply), "input": {}}
            full = json.dumps(self._content(reply)["input"])
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in halves(full)]
        else:
            assert isinstance(reply, Text)
            block = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in halves(reply.text)]
        frames.append(
            sse(
                {"type": "content_block_start", "index": 0, "content_block": block},
                "content_block_start",
            )
        )
        for delta in deltas:
            frames.append(
                sse(
                    {"type": "content_block_delta", "index": 0, "delta": delta},
                    "content_block_delta",
                )
            )
        frames.append(sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
        finish_at = len(frames)
        frames.append(
            sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": self._stop_reason(reply), "stop_sequence": None},
                    "usage": {"output_tokens": usage.output_tokens},
                },
                "message_delta",
            )
        )
        frames.append(sse({"type": "message_stop"}, "message_stop"))
        return StreamPlan(frames, finish_at)

    def json(self, reply: Reply, model: str, usage: Usage) -> Any:
        return {
            "id": new_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [self._content(reply)],
            "stop_reason": self._stop_reason(reply),
            "stop_sequence": None,
            "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        }

    def error(self, status: int, message: str) -> Any:
        kind = _ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
