"""OpenAI Responses API (`POST /v1/responses`), as Codex streams it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .script import Api, Tool, ToolKind
from .wire import Reply, StreamPlan, Text, ToolUse, Usage, args_text, halves, new_id, sse

_ERROR_TYPES = {401: "invalid_api_key", 429: "rate_limit_exceeded", 500: "server_error"}


class OpenAIResponses:
    """Renders replies as `response.created … response.completed` SSE or a response object."""

    api: Api = "responses"

    def tools(self, body: Mapping[str, Any]) -> list[Tool]:
        found: list[Tool] = []
        for t in body.get("tools") or []:
            if not isinstance(t, dict) or "name" not in t:
                continue  # built-ins such as {"type": "web_search"}
            kind: ToolKind = "custom" if t.get("type") == "custom" else "function"
            found.append(Tool(name=str(t["name"]), kind=kind, schema=t.get("parameters") or {}))
        return found

    def _item(self, reply: Reply, item_id: str, done: bool) -> dict[str, Any]:
        status = "completed" if done else "in_progress"
        if isinstance(reply, ToolUse):
            text = args_text(reply.args) if done else ""
            if reply.tool.kind == "custom":
                return {
                    "type": "custom_tool_call",
                    "id": item_id,
                    "status": status,
                    "call_id": reply.call_id,
                    "name": reply.tool.name,
                    "input": text,
                }
            return {
                "type": "function_call",
                "id": item_id,
                "status": status,
                "call_id": reply.call_id,
                "name": reply.tool.name,
                "arguments": text,
            }
        assert isinstance(reply, Text)
        content = [{"type": "output_text", "text": reply.text, "annotations": []}] if done else []
        return {
            "type": "message",
            "id": item_id,
            "role": "assistant",
            "status": status,
            "content": content,
        }

    def _response(
        self, resp_id: str, model: str, status: str, output: list[Any], usage: Usage | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": resp_id,
            "object": "response",
            "model": model,
            "status": status,
            "output": output,
        }
        if usage is not None:
            body["usage"] = {
                "input_tokens": usage.input_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": usage.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": usage.total,
            }
        return body

    def stream(self, reply: Reply, model: str, usage: Usage) -> StreamPlan:
        resp_id, item_id = new_id("resp_"), new_id("item_")
        created = self._response(resp_id, model, "in_progress", [], None)
        frames = [
            sse({"type": "response.created", "response": created}, "response.created"),
            sse(
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": self._item(reply, item_id, done=False),
                },
                "response.output_item.added",
            ),
        ]
        if isinstance(reply, ToolUse):
            kind = (
                "response.custom_tool_call_input.delta"
                if reply.tool.kind == "custom"
                else "response.function_call_arguments.delta"
            )
            pieces = halves(args_text(reply.args))
        else:
            kind = "response.output_text.delta"
            pieces = halves(reply.text)
        for piece in pieces:
            delta = {
                "type": kind,
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "delta": piece,
            }
            frames.append(sse(delta, kind))
        done_item = self._item(reply, item_id, done=True)
        frames.append(
            sse(
                {"type": "response.output_item.done", "output_index": 0, "item": done_item},
                "response.output_item.done",
            )
        )
        finish_at = len(frames)
        completed = self._response(resp_id, model, "completed", [done_item], usage)
        frames.append(
            sse({"type": "response.completed", "response": completed}, "response.completed")
        )
        return StreamPlan(frames, finish_at)

    def json(self, reply: Reply, model: str, usage: Usage) -> Any:
        item = self._item(reply, new_id("item_"), done=True)
        return self._response(new_id("resp_"), model, "completed", [item], usage)

    def error(self, status: int, message: str) -> Any:
        kind = _ERROR_TYPES.get(status, "server_error")
        return {"error": {"message": message, "type": kind, "code": kind, "param": None}}
