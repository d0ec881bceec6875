"""Gemini API (`…/models/{m}:streamGenerateContent?alt=sse`, `:generateContent`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .script import Api, Tool
from .wire import Reply, StreamPlan, Text, ToolUse, Usage, halves, new_id, sse

_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
}


class GeminiGenerate:
    """Renders replies as `GenerateContentResponse` chunks (SSE) or one response object."""

    api: Api = "gemini"

    def tools(self, body: Mapping[str, Any]) -> list[Tool]:
        found: list[Tool] = []
        for group in body.get("tools") or []:
            for decl in (
                (group.get("functionDeclarations") or []) if isinstance(group, dict) else []
            ):
                schema = decl.get("parametersJsonSchema") or decl.get("parameters") or {}
                found.append(Tool(name=str(decl["name"]), schema=schema))
        return found

    @staticmethod
    def _usage(usage: Usage) -> dict[str, int]:
        return {
            "promptTokenCount": usage.input_tokens,
            "candidatesTokenCount": usage.output_tokens,
            "totalTokenCount": usage.total,
        }

    @staticmethod
    def _parts(reply: Reply) -> list[dict[str, Any]]:
        if isinstance(reply, ToolUse):
            args = reply.args if isinstance(reply.args, dict) else {"input": reply.args}
            return [{"functionCall": {"id": reply.call_id, "name": reply.tool.name, "args": args}}]
        return [{"text": reply.text}]

    def _chunk(
        self,
        parts: list[dict[str, Any]],
        model: str,
        resp_id: str,
        finish: str | None = None,
        usage: Usage | None = None,
    ) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        out: dict[str, Any] = {
            "candidates": [candidate],
            "modelVersion": model,
            "responseId": resp_id,
        }
        if usage is not None:
            out["usageMetadata"] = self._usage(usage)
        return out

    def stream(self, reply: Reply, model: str, usage: Usage) -> StreamPlan:
        resp_id = new_id("")
        if isinstance(reply, ToolUse):
            bodies = [self._parts(reply)]
        else:
            assert isinstance(reply, Text)
            bodies = [[{"text": piece}] for piece in halves(reply.text)]
        frames = [sse(self._chunk(parts, model, resp_id)) for parts in bodies]
        finish_at = len(frames)
        frames.append(sse(self._chunk([{"text": ""}], model, resp_id, "STOP", usage)))
        return StreamPlan(frames, finish_at)

    def json(self, reply: Reply, model: str, usage: Usage) -> Any:
        return self._chunk(self._parts(reply), model, new_id(""), "STOP", usage)

    def error(self, status: int, message: str) -> Any:
        return {
            "error": {"code": status, "message": message, "status": _STATUS.get(status, "INTERNAL")}
        }
