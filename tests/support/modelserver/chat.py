"""OpenAI Chat Completions (`POST …/chat/completions`), as OpenCode and Pi stream it."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from .script import Api, Tool
from .wire import Reply, StreamPlan, Text, ToolUse, Usage, args_text, halves, new_id, sse


class OpenAIChat:
    """Renders replies as `chat.completion.chunk` SSE (usage chunk, `[DONE]`) or a completion."""

    api: Api = "chat"

    def tools(self, body: Mapping[str, Any]) -> list[Tool]:
        found: list[Tool] = []
        for t in body.get("tools") or []:
            fn = t.get("function") if isinstance(t, dict) else None
            if isinstance(fn, dict) and "name" in fn:
                found.append(Tool(name=str(fn["name"]), schema=fn.get("parameters") or {}))
        return found

    @staticmethod
    def _usage(usage: Usage) -> dict[str, int]:
        return {
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "total_tokens": usage.total,
        }

    def stream(self, reply: Reply, model: str, usage: Usage) -> StreamPlan:
        chunk_id, created = new_id("chatcmpl-"), int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            return sse(
                {
                    "id": chunk_id,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [choice],
                    **extra,
                }
            )

        frames = [chunk({"role": "assistant", "content": ""})]
        if isinstance(reply, ToolUse):
            first = {
                "index": 0,
                "id": reply.call_id,
                "type": "function",
                "function": {"name": reply.tool.name, "arguments": ""},
            }
            frames.append(chunk({"tool_calls": [first]}))
            for piece in halves(args_text(reply.args)):
                frames.append(
                    chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
                )
            finish = "tool_calls"
        else:
            assert isinstance(reply, Text)
            frames.extend(chunk({"content": piece}) for piece in halves(reply.text))
            finish = "stop"
        finish_at = len(frames)
        frames.append(chunk({}, finish))
        frames.append(
            sse(
                {
                    "id": chunk_id,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": self._usage(usage),
                }
            )
        )
        frames.append(sse("[DONE]"))
        return StreamPlan(frames, finish_at)

    def json(self, reply: Reply, model: str, usage: Usage) -> Any:
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if isinstance(reply, ToolUse):
            message["tool_calls"] = [
                {
                    "id": reply.call_id,
                    "type": "function",
                    "function": {"name": reply.tool.name, "arguments": args_text(reply.args)},
                }
            ]
            finish = "tool_calls"
        else:
            message["content"] = reply.text
            finish = "stop"
        return {
            "id": new_id("chatcmpl-"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": self._usage(usage),
        }

    def error(self, status: int, message: str) -> Any:
        kind = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status, "server_error")
        return {"error": {"message": message, "type": kind, "code": kind, "param": None}}
