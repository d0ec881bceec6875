"""ACP → Baton events: pure functions over the wire shapes (camelCase JSON, as sent).

:class:`TurnTranslator` folds one prompt turn — its ``session/update`` notifications and the
``session/prompt`` result or error — into normalized events. :func:`permission_event` turns a
``session/request_permission`` into a ``permission`` event (tool, kind, preview — the command
or a unified diff — and the options by kind); :func:`pick_option` finds the option an answer
means (by id, by kind, or by a word such as ``allow`` / ``always`` / ``reject``).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from baton.agents.classify import Classified, classify
from baton.core import events
from baton.core.events import Event, EventType
from baton.core.lifecycle import Completion

#: How much of a diff side, a tool output or a preview one event keeps.
DIFF_CHARS = 4000
OUTPUT_CHARS = 2000
PREVIEW_CHARS = 4000
#: A text segment made of one piece of text (at least REPEAT_UNIT characters) sent REPEATS
#: times over is an agent re-sending a broken stream (OpenCode retries a cut stream forever).
REPEATS = 3
REPEAT_UNIT = 8
REPEAT_SCAN = 20_000  # segments longer than this are not scanned

_CUT = re.compile(r"^terminated$|\bterminated\b.*socket|UND_ERR_SOCKET|ECONNRESET|socket hang up")

#: Words an answer may use instead of an option id or kind.
ALIASES: dict[str, tuple[str, ...]] = {
    "allow": ("allow_once", "allow_always"),
    "once": ("allow_once",),
    "yes": ("allow_once", "allow_always"),
    "always": ("allow_always",),
    "reject": ("reject_once", "reject_always"),
    "deny": ("reject_once", "reject_always"),
    "no": ("reject_once", "reject_always"),
    "never": ("reject_always", "reject_once"),
}
#: The option kind a policy decision picks, best first.
DECISION_KINDS: dict[str, tuple[str, ...]] = {
    "allow": ("allow_once", "allow_always"),
    "deny": ("reject_once", "reject_always"),
}


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more)"


def relative(path: str, root: str) -> str:
    """``path`` relative to ``root`` when inside it; the path as given otherwise."""
    if not path:
        return path
    full = path if os.path.isabs(path) else os.path.join(root, path)
    rel = os.path.relpath(os.path.normpath(full), os.path.normpath(root))
    return path if rel.startswith("..") else rel


def command_of(raw_input: object) -> str | None:
    """The shell command a tool call's ``rawInput`` carries, as one line, if any."""
    raw = _dict(raw_input)
    cmd = raw.get("command", raw.get("cmd"))
    if isinstance(cmd, list) and cmd:
        parts = [str(c) for c in cmd]
        if len(parts) >= 3 and os.path.basename(parts[0]) in ("bash", "sh", "zsh"):
            return parts[-1]  # ["/bin/bash", "-lc", "touch x"]
        return " ".join(parts)
    return str(cmd) if isinstance(cmd, str) and cmd else None


def diffs_of(tool_call: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``diff`` content items of a tool call: ``{path, oldText, newText}``."""
    out = []
    for item in tool_call.get("content") or []:
        if isinstance(item, dict) and item.get("type") == "diff" and item.get("path"):
            out.append(item)
    return out


def paths_of(tool_call: Mapping[str, Any]) -> list[str]:
    """Every file path a tool call names: locations, diffs and the usual rawInput keys."""
    found: list[str] = []
    kind = tool_call.get("kind")
    if kind != "execute":  # an execute location is its working folder, not a file it touches
        for loc in tool_call.get("locations") or []:
            if isinstance(loc, dict) and loc.get("path"):
                found.append(str(loc["path"]))
    found += [str(d["path"]) for d in diffs_of(tool_call)]
    raw = _dict(tool_call.get("rawInput"))
    for key in ("file_path", "filePath", "filepath", "path", "absolute_path", "notebook_path"):
        if isinstance(raw.get(key), str) and raw[key]:
            found.append(raw[key])
    changes = raw.get("changes")
    if isinstance(changes, dict):
        found += [str(p) for p in changes]
    return list(dict.fromkeys(found))


def unified(path: str, old: str | None, new: str | None) -> str:
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        (new or "").splitlines(keepends=True),
        fromfile=f"a/{path}" if old is not None else "/dev/null",
        tofile=f"b/{path}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def preview(tool_call: Mapping[str, Any], root: str) -> str:
    """What the user should see before allowing: the command, else the diff, else the title."""
    command = command_of(tool_call.get("rawInput"))
    if command:
        return clip(command, PREVIEW_CHARS)
    parts = [
        unified(relative(str(d["path"]), root), d.get("oldText"), d.get("newText"))
        for d in diffs_of(tool_call)
    ]
    raw_diff = _dict(tool_call.get("rawInput")).get("diff")
    if not parts and isinstance(raw_diff, str):
        parts.append(raw_diff)
    if parts:
        return clip("".join(parts), PREVIEW_CHARS)
    for item in tool_call.get("content") or []:
        text = _dict(_dict(item).get("content")).get("text")
        if isinstance(text, str) and text.strip():
            return clip(f"{tool_call.get('title') or ''}\n{text}".strip(), PREVIEW_CHARS)
    return str(tool_call.get("title") or tool_call.get("kind") or "a tool call")


def tool_name(tool_call: Mapping[str, Any], known: str = "") -> str:
    claude = _dict(_dict(tool_call.get("_meta")).get("claudeCode")).get("toolName")
    if isinstance(claude, str) and claude:
        return claude
    kind = tool_call.get("kind")
    if kind == "execute":
        return "shell"
    if kind == "edit":
        return "edit"
    return known or str(tool_call.get("title") or kind or "tool")


def options_of(options: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    return [
        {
            "id": str(o.get("optionId", "")),
            "name": str(o.get("name", "")),
            "kind": str(o.get("kind", "")),
        }
        for o in options
    ]


def permission_event(
    perm_id: str,
    tool_call: Mapping[str, Any],
    options: Sequence[Mapping[str, Any]],
    root: str,
    *,
    status: str = "pending",
    answer: str | None = None,
    by: str | None = None,
) -> Event:
    """A ``permission`` event for a request (``status``: pending, answered, cancelled)."""
    command = command_of(tool_call.get("rawInput"))
    data: dict[str, Any] = {
        "id": perm_id,
        "tool": str(tool_call.get("title") or tool_name(tool_call)),
        "kind": str(tool_call.get("kind") or "other"),
        "preview": preview(tool_call, root),
        "command": command,
        "files": [relative(p, root) for p in paths_of(tool_call)],
        "options": options_of(options),
        "toolCallId": str(tool_call.get("toolCallId", "")),
        "status": status,
    }
    if answer is not None:
        data["answer"] = answer
    if by is not None:
        data["by"] = by
    return Event(EventType.PERMISSION, data)


def pick_option(options: Sequence[Mapping[str, Any]], wanted: str) -> dict[str, str] | None:
    """The option ``wanted`` names: an option id, an option kind, or an alias word."""
    opts = options_of(options)
    for o in opts:
        if o["id"] == wanted:
            return o
    kinds = ALIASES.get(wanted.lower(), (wanted,))
    for kind in kinds:
        for o in opts:
            if o["kind"] == kind:
                return o
    return None


def option_for_decision(options: Sequence[Mapping[str, Any]], decision: str) -> str | None:
    """The option id a policy decision (``allow``/``deny``) picks; None if none fits."""
    opts = options_of(options)
    for kind in DECISION_KINDS.get(decision, ()):
        for o in opts:
            if o["kind"] == kind:
                return o["id"]
    return None


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
                text = _dict(update.get("content")).get("text")
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
                cost = _dict(update.get("cost")).get("amount")
                data = {
                    "input": 0,
                    "output": 0,
                    "cached": 0,
                    "cost": float(cost) if isinstance(cost, int | float) else None,
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
                        "output": clip(_output(update), OUTPUT_CHARS),
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


def todo_plan(tool_call: Mapping[str, Any]) -> list[Event]:
    """A ``plan`` event from a todo-list tool call (OpenCode's ``todowrite`` sends no ``plan``
    update, only the tool call with its ``rawInput.todos``)."""
    todos = _dict(tool_call.get("rawInput")).get("todos")
    if not isinstance(todos, list) or not todos:
        return []
    entries = []
    for todo in todos:
        if not isinstance(todo, dict):
            return []
        text = todo.get("content") or todo.get("description")
        if not isinstance(text, str):
            return []
        entries.append(
            {
                "text": text,
                "status": str(todo.get("status") or "pending"),
                "priority": str(todo.get("priority") or "medium"),
            }
        )
    return [Event(EventType.PLAN, {"entries": entries})]


def is_empty_turn(response: Mapping[str, Any], translator: TurnTranslator) -> bool:
    """An ``end_turn`` with no update and no tokens: the Claude adapter's stale reply."""
    if response.get("stopReason") != "end_turn" or translator.updates:
        return False
    usage = _dict(response.get("usage"))
    return not any(isinstance(v, int) and v > 0 for v in usage.values())


def usage_events(response: Mapping[str, Any]) -> list[Event]:
    """Token counts from where each agent puts them: ``usage`` or ``_meta.quota``."""
    usage = _dict(response.get("usage"))
    if usage:
        return [
            Event(
                EventType.USAGE,
                {
                    "input": int(usage.get("inputTokens") or 0),
                    "output": int(usage.get("outputTokens") or 0),
                    "cached": int(usage.get("cachedReadTokens") or 0),
                    "cost": None,
                },
            )
        ]
    count = _dict(_dict(_dict(response.get("_meta")).get("quota")).get("token_count"))
    if count:
        return [
            Event(
                EventType.USAGE,
                {
                    "input": int(count.get("input_tokens") or 0),
                    "output": int(count.get("output_tokens") or 0),
                    "cached": 0,
                    "cost": None,
                },
            )
        ]
    return []


def _zero_quota(response: Mapping[str, Any]) -> bool:
    count = _dict(_dict(_dict(response.get("_meta")).get("quota")).get("token_count"))
    return bool(count) and not any(isinstance(v, int) and v > 0 for v in count.values())


def _output(update: Mapping[str, Any]) -> str:
    raw = update.get("rawOutput")
    if isinstance(raw, str):
        return raw
    if isinstance(raw, dict):
        for key in ("formatted_output", "aggregated_output", "output", "stdout"):
            if isinstance(raw.get(key), str) and raw[key]:
                return str(raw[key])
    texts = []
    for item in update.get("content") or []:
        text = _dict(_dict(item).get("content")).get("text")
        if isinstance(text, str):
            texts.append(text)
    return "\n".join(texts)
