"""Normalized events: what every adapter turns its CLI's stream into, plus Baton's own."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from baton.core.masking import StreamMasker, prepare, redact


class EventType(StrEnum):
    # From the agent's stream.
    SESSION = "session"  # {"id": str}
    TEXT = "text"  # {"text": str, "delta": bool}
    TOOL = "tool"  # {"name": str, "input": str, "files": [str]}
    TOOL_RESULT = "tool_result"  # {"name": str, "ok": bool, "output": str}
    USAGE = "usage"  # baton.core.usage.Usage.to_json(): {"input", "cached", "output",
    #                   "reasoning"?, "cost", "cost_source"}, "model" where only it names it,
    #                   "of": "session" where the counts are the resumed session's totals,
    #                   "seen_input" where the stream says what its own calls read;
    #                   "running": true for a count while the turn goes on (its report replaces it)
    QUESTION = "question"  # {"text": str}
    PERMISSION = "permission"  # {"tool": str, "preview": str, "options": [...]}
    PLAN = "plan"  # {"entries": [{"text": str, "status": str}]}
    ERROR = "error"  # {"kind": Completion, "message": str, "retry_after": float | None,
    #                    "resets_at": float | None}
    FINAL = "final"  # {"text": str}
    # Baton's own.
    STATE = "state"  # {"from": TaskState, "to": TaskState, "reason": str}
    DIFF = "diff"  # {"final": bool, "files": int, "hunks": int, "added": int, "removed": int}
    VERIFY = "verify"  # {"name": str, "command": [...], "exit": int, "seconds": float, "passed"}
    REVIEW = "review"  # {"worker": str, "verdict": str, "findings": [...], "summary": str}
    BUDGET = "budget"  # {"kind": "alert" | "stop", "scope", "name"?, "day"?, "measure",
    #                     "used", "limit", "percent"? | "message"?}: baton.core.budget
    LOG = "log"  # {"level": str, "message": str}: Baton's notes about the task (stderr, adoption)


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened to a task. ``seq`` is contiguous per task, from 1."""

    type: EventType
    data: dict[str, Any] = field(default_factory=dict)
    task_id: str = ""
    seq: int = 0
    ts: float = 0.0
    attempt: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "taskId": self.task_id,
            "seq": self.seq,
            "ts": self.ts,
            "attempt": self.attempt,
            "type": str(self.type),
            "data": self.data,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Event:
        return cls(
            type=EventType(obj["type"]),
            data=dict(obj.get("data") or {}),
            task_id=str(obj.get("taskId", "")),
            seq=int(obj.get("seq", 0)),
            ts=float(obj.get("ts", 0.0)),
            attempt=int(obj.get("attempt", 0)),
        )


def text(value: str, *, delta: bool = False) -> Event:
    return Event(EventType.TEXT, {"text": value, "delta": delta})


def error(kind: str, message: str, **extra: Any) -> Event:
    return Event(EventType.ERROR, {"kind": kind, "message": message, **extra})


class EventMasker:
    """Masks secret values in one attempt's events, in the order the parser yields them.

    The text deltas are one stream (:class:`~baton.core.masking.StreamMasker`): a secret cut
    over several deltas is masked, and deltas may be cut anew — their text, joined, is the
    original with each secret masked. Every other event is masked whole. Another kind of
    event lets out a short held-back beginning first (the text and it stay in order); a
    longer one (the start of a secret, likely) stays held until the text goes on.
    :meth:`flush` at the attempt's end gives the rest as a last delta.
    """

    def __init__(self, values: Iterable[str]) -> None:
        self.values = prepare(values)
        self.text = StreamMasker(self.values)
        self._last: Event | None = None  # the last text delta: the shape of one let out later

    def events(self, events: Iterable[Event]) -> list[Event]:
        if not self.values:
            return list(events)
        out: list[Event] = []
        for e in events:
            if e.type == EventType.TEXT and e.data.get("delta"):
                self._last = e
                self._add(out, self.text.push(str(e.data.get("text", ""))))
            else:
                self._add(out, self.text.pause())
                out.append(replace(e, data=redact(e.data, self.values)))
        return out

    def flush(self) -> list[Event]:
        out: list[Event] = []
        self._add(out, self.text.flush())
        return out

    def _add(self, out: list[Event], shown: str) -> None:
        if shown and self._last is not None:
            data = redact({k: v for k, v in self._last.data.items() if k != "text"}, self.values)
            out.append(replace(self._last, data={**data, "text": shown}))


def describe(event: Event) -> str:
    """A short human line for progress displays ("editing foo.py", "running tool")."""
    d = event.data
    match event.type:
        case EventType.TOOL:
            files = d.get("files") or []
            name = str(d.get("name", "tool"))
            if files:
                verb = "editing" if name.lower() in _EDIT_TOOLS else name
                return f"{verb} {', '.join(str(f) for f in files[:3])}"
            return f"running {name}"
        case EventType.TEXT:
            line = str(d.get("text", "")).strip().splitlines()
            return line[-1][:80] if line else "thinking"
        case EventType.USAGE:
            return f"{int(d.get('input', 0)) + int(d.get('output', 0))} tokens"
        case EventType.QUESTION:
            return f"asks: {str(d.get('text', ''))[:80]}"
        case EventType.ERROR:
            return f"error ({d.get('kind')}): {str(d.get('message', ''))[:80]}"
        case EventType.STATE:
            return str(d.get("to", ""))
        case EventType.DIFF:
            which = "final" if d.get("final") else "draft"
            return f"{which}: {d.get('files', 0)} files, {d.get('hunks', 0)} hunks"
        case EventType.SESSION:
            return f"session {str(d.get('id', ''))[:12]}"
        case EventType.TOOL_RESULT:
            return f"{d.get('name') or 'tool'} {'done' if d.get('ok', True) else 'failed'}"
        case EventType.FINAL:
            first = str(d.get("text", "")).strip().splitlines()
            return "finished" + (f": {first[0][:80]}" if first else "")
        case EventType.LOG:
            return str(d.get("message", ""))[:120]
        case EventType.PLAN:
            entries = d.get("entries") or []
            done = sum(1 for e in entries if isinstance(e, dict) and e.get("status") == "completed")
            current = next(
                (
                    e.get("text", "")
                    for e in entries
                    if isinstance(e, dict) and e.get("status") == "in_progress"
                ),
                "",
            )
            return f"{done}/{len(entries)}" + (f": {current}" if current else "")
        case EventType.VERIFY:
            verdict = "passed" if d.get("passed") else f"failed (exit {d.get('exit')})"
            return f"check {d.get('name', '')} {verdict}"
        case EventType.REVIEW:
            n = len(d.get("findings") or [])
            return f"review by {d.get('worker', '?')}: {d.get('verdict', '?')}, {n} finding(s)"
        case EventType.PERMISSION:
            return f"asks permission: {d.get('tool', '')} {str(d.get('preview', ''))[:60]}"
        case EventType.BUDGET:
            return str(d.get("message") or "")[:120] or (
                f"budget: {d.get('scope')} {d.get('measure')} at {d.get('percent')} %"
            )
        case _:
            return str(event.type)


_EDIT_TOOLS = frozenset(
    {"edit", "write", "multiedit", "apply_patch", "write_file", "replace", "delete", "rename"}
)
