"""ACP → Baton events: pure functions over the wire shapes (camelCase JSON, as sent).

:class:`TurnTranslator` folds one prompt turn — its ``session/update`` notifications and the
``session/prompt`` result or error — into normalized events: text, tool calls and their
results (read by :mod:`baton.acp.tool_calls`), plans, usage, and the end of the turn (a
``final`` or an error of a kind the broker acts on). It also notices an agent re-sending a
broken stream forever. Permission requests become events in
:mod:`baton.acp.permission_requests`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from baton.acp.tool_calls import (
    as_dict,
    clip,
    command_of,
    diffs_of,
    output_of,
    paths_of,
    relative,
    todo_plan,
    tool_name,
)
from baton.agents.classify import Classified, classify
from baton.core import events
from baton.core.events import Event, EventType
from baton.core.lifecycle import Completion
from baton.core.usage import Usage

#: How much of a diff side or a tool output one event keeps.
DIFF_CHARS = 4000
OUTPUT_CHARS = 2000
#: A text segment made of one piece of text (at least REPEAT_UNIT characters) sent REPEATS
#: times over is an agent re-sending a broken stream (OpenCode retries a cut stream forever).
REPEATS = 3
REPEAT_UNIT = 8
REPEAT_SCAN = 20_000  # segments longer than this are not scanned

_CUT = re.compile(r"^terminated$|\bterminated\b.*socket|UND_ERR_SOCKET|ECONNRESET|socket hang up")


@dataclass(slots=True)
class _Call:
    name: str
    files: list[str] = field(default_factory=list)
    diffs: int = 0
    done: bool = False


@dataclass(slots=True)
class TurnTranslator:
    """The events of one prompt turn. ``guard_repeats``: watch for a re-sent broken stream."""

    root: str
    guard_repeats: bool = False
    texts: list[str] = field(default_factory=list)
    updates: int = 0  # updates that carried something of this turn
    looping: bool = False  # the agent keeps re-sending the same text (see ``guard_repeats``)
    _segment: str = ""
    _calls: dict[str, _Call] = field(default_factory=dict)

    def update(self, update: Mapping[str, Any]) -> list[Event]:
        """Events for one ``session/update`` payload's ``update`` object."""
        kind = update.get("sessionUpdate")
        if kind in ("agent_message_chunk", "tool_call", "tool_call_update", "plan"):
            self.updates += 1
        match kind:
            case "agent_message_chunk":
                text = as_dict(update.get("content")).get("text")
                if not isinstance(text, str) or not text:
                    return []
                self.texts.append(text)
                self._watch_repeats(text)
                return [events.text(text, delta=True)]
            case "tool_call":
                self._segment = ""
                return self._tool(update, start=True)
            case "tool_call_update":
                return self._tool(update, start=False)
            case "plan":
                entries = [
                    {
                        "text": str(e.get("content", "")),
                        "status": str(e.get("status", "pending")),
                        "priority": str(e.get("priority", "medium")),
                    }
                    for e in update.get("entries") or []
                    if isinstance(e, dict)
                ]
                return [Event(EventType.PLAN, {"entries": entries})]
            case "usage_update":
                cost = as_dict(update.get("cost")).get("amount")
                data = {
                    **Usage.of(cost=cost).to_json(),
                    "used": update.get("used"),
                    "size": update.get("size"),
                }
                return [Event(EventType.USAGE, data)]
            case _:
                return []

    def _watch_repeats(self, text: str) -> None:
        if not self.guard_repeats:
            return
        self._segment += text
        seg = self._segment
        if REPEAT_UNIT * REPEATS <= len(seg) <= REPEAT_SCAN:
            unit = period(seg)
            if unit >= REPEAT_UNIT and len(seg) % unit == 0 and len(seg) // unit >= REPEATS:
                self.looping = True

    def _tool(self, update: Mapping[str, Any], *, start: bool) -> list[Event]:
        call_id = str(update.get("toolCallId", ""))
        call = self._calls.get(call_id)
        out: list[Event] = todo_plan(update)
        files = [relative(p, self.root) for p in paths_of(update)]
        diffs = diffs_of(update)
        title = str(update.get("title") or "")
        if call is None or start:
            call = self._calls.setdefault(call_id, _Call(tool_name(update)))
            call.files = files or call.files
            call.diffs = len(diffs)
            out.append(self._tool_event(call_id, call, update, diffs, title))
        elif (files and files != call.files) or len(diffs) > call.diffs:
            call.files = files or call.files
            call.diffs = max(call.diffs, len(diffs))
            out.append(self._tool_event(call_id, call, update, diffs, title, again=True))
        status = update.get("status")
        if status in ("completed", "failed") and not call.done:
            call.done = True
            out.append(
                Event(
                    EventType.TOOL_RESULT,
                    {
                        "name": call.name,
                        "ok": status == "completed",
                        "output": clip(output_of(update), OUTPUT_CHARS),
                        "id": call_id,
                    },
                )
            )
        return out

    def _tool_event(
        self,
        call_id: str,
        call: _Call,
        update: Mapping[str, Any],
        diffs: list[dict[str, Any]],
        title: str,
        again: bool = False,
    ) -> Event:
        data: dict[str, Any] = {
            "name": call.name,
            "input": clip(command_of(update.get("rawInput")) or title, 200),
            "files": call.files,
            "kind": str(update.get("kind") or ""),
            "id": call_id,
        }
        if diffs:  # for the live preview only: Baton's diff comes from the worktree
            data["diffs"] = [
                {
                    "path": relative(str(d["path"]), self.root),
                    "old": clip(str(d.get("oldText") or ""), DIFF_CHARS),
                    "new": clip(str(d.get("newText") or ""), DIFF_CHARS),
                }
                for d in diffs
            ]
        if again:
            data["update"] = True
        return Event(EventType.TOOL, data)

    @property
    def text(self) -> str:
        return "".join(self.texts).strip()

    def finish(self, response: Mapping[str, Any], *, flag_zero_usage: bool = False) -> list[Event]:
        """Events for the ``session/prompt`` result: usage, then the end of the turn."""
        out = usage_events(response)
        stop = response.get("stopReason")
        if self.looping:
            out.append(
                events.error(
                    "network",
                    "the model stream kept breaking and the agent kept retrying it; "
                    "the turn was stopped",
                )
            )
            return out
        match stop:
            case "end_turn":
                data: dict[str, Any] = {"text": self.text}
                if flag_zero_usage and _zero_quota(response):
                    data["truncated"] = True
                    out.append(
                        Event(
                            EventType.LOG,
                            {
                                "level": "warning",
                                "message": "the agent ended its turn having counted no tokens: "
                                "the model stream was probably cut and the answer may be "
                                "incomplete",
                            },
                        )
                    )
                out.append(Event(EventType.FINAL, data))
            case "cancelled":
                out.append(events.error("cancelled", "the turn was cancelled"))
            case "max_tokens" | "max_turn_requests":
                out.append(events.error("max_turns", f"the agent stopped: {stop}"))
            case "refusal":
                out.append(events.error("worker_error", "the agent refused to continue"))
            case _:
                out.append(events.error("worker_error", f"unknown stop reason {stop!r}"))
        return out

    def failure(self, code: int, message: str, data: object = None) -> list[Event]:
        """Events for a ``session/prompt`` that failed with a JSON-RPC error."""
        detail = message
        if isinstance(data, dict) and data.get("message"):
            detail = f"{message}: {data['message']}"
        elif isinstance(data, str) and data:
            detail = f"{message}: {data}"
        status = code if 100 <= code < 600 else None  # Gemini answers with the HTTP status
        found = classify(f"{detail} {data!r}", status=status)
        if _CUT.search(detail):  # the model stream was cut (Gemini: "terminated", code 500)
            found = Classified(Completion.NETWORK)
        return [
            events.error(
                str(found.kind),
                clip(detail, OUTPUT_CHARS),
                retry_after=found.retry_after,
                resets_at=found.resets_at,
                code=code,
            )
        ]


def period(text: str) -> int:
    """The shortest ``p`` such that ``text`` repeats with period ``p`` (KMP failure function)."""
    fail = [0] * (len(text) + 1)
    k = 0
    for i in range(1, len(text)):
        while k and text[i] != text[k]:
            k = fail[k]
        if text[i] == text[k]:
            k += 1
        fail[i + 1] = k
    return len(text) - fail[len(text)]


def is_empty_turn(response: Mapping[str, Any], translator: TurnTranslator) -> bool:
    """An ``end_turn`` with no update and no tokens: the Claude adapter's stale reply."""
    if response.get("stopReason") != "end_turn" or translator.updates:
        return False
    usage = as_dict(response.get("usage"))
    return not any(isinstance(v, int) and v > 0 for v in usage.values())


def usage_events(response: Mapping[str, Any]) -> list[Event]:
    """Token counts from where each agent puts them: ``usage`` or ``_meta.quota``."""
    usage = as_dict(response.get("usage"))
    if usage:
        return [
            Event(
                EventType.USAGE,
                Usage.of(
                    input=int(usage.get("inputTokens") or 0)
                    + int(usage.get("cachedWriteTokens") or 0),
                    cached_input=usage.get("cachedReadTokens"),
                    output=usage.get("outputTokens"),
                    reasoning=usage.get("thoughtTokens"),
                ).to_json(),
            )
        ]
    count = as_dict(as_dict(as_dict(response.get("_meta")).get("quota")).get("token_count"))
    if count:
        return [
            Event(
                EventType.USAGE,
                Usage.of(
                    input=count.get("input_tokens"), output=count.get("output_tokens")
                ).to_json(),
            )
        ]
    return []


def _zero_quota(response: Mapping[str, Any]) -> bool:
    count = as_dict(as_dict(as_dict(response.get("_meta")).get("quota")).get("token_count"))
    return bool(count) and not any(isinstance(v, int) and v > 0 for v in count.values())
