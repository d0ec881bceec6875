"""Any program that speaks Baton's adapter protocol (provider ``external``): a worker without
Python code. The protocol is ``docs/reference/adapter-protocol.md``; in short:

- Baton starts ``options.argv`` once per turn, in the task's checkout, and writes one JSON
  line on its stdin, then closes it: ``{"type": "start", "protocol": 1, "task", "prompt",
  "cwd", "reason", "session", "model", "files", "scope"}`` (``session`` set: resume it).
- The program writes JSON lines on stdout, one event each: ``session`` (``id``), ``text``
  (``text``, a piece of the answer), ``tool`` (``name``, ``files``, ``input``),
  ``tool_result`` (``name``, ``ok``, ``output``), ``usage`` (``input``, ``cached``,
  ``output``, ``reasoning``, ``cost``), and exactly one end: ``final`` (``text``),
  ``question`` (``text``: the user answers in a next turn of the same session) or ``error``
  (``kind``, ``message``, ``retry_after``). Then it exits; 0 after ``final`` or ``question``.
- Cancel is SIGTERM to its process group, then SIGKILL: it stops what it started.

A line that is not JSON is kept as a log line; a stream that ends with no end event is a
``worker_error``. ``baton adapter check CMD`` runs a candidate through the protocol's cases.
"""

from __future__ import annotations

import json
from typing import Any

from baton.agents.base import AgentNotFound, Launch, Turn
from baton.agents.stream import json_object, unparsed
from baton.config.profiles import Profile
from baton.core import events
from baton.core.events import Event, EventType
from baton.core.lifecycle import Completion
from baton.core.usage import Usage

PROTOCOL = 1
#: The event types a program may write, and the ones that end its turn.
KINDS = ("session", "text", "tool", "tool_result", "usage", "final", "question", "error")
ENDS = ("final", "question", "error")
#: The error kinds a program may name (any other becomes ``worker_error``).
ERROR_KINDS = frozenset(str(c) for c in Completion) - {"completed", "cancelled", "interrupted"}


def start_line(turn: Turn, model: str | None) -> str:
    """The one line Baton writes on the program's stdin."""
    start = {
        "type": "start",
        "protocol": PROTOCOL,
        "task": turn.task_id,
        "prompt": turn.prompt,
        "cwd": turn.cwd,
        "reason": turn.reason,
        "session": turn.session_id,
        "model": model,
        "files": list(turn.files),
        "scope": list(turn.scope),
    }
    return json.dumps(start, ensure_ascii=False) + "\n"


def _strings(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


class ExternalParser:
    """The program's JSON lines → Baton's events; what breaks the protocol is said."""

    def __init__(self) -> None:
        self.ended: str | None = None  # the end event that came

    def feed(self, line: str) -> list[Event]:
        obj = json_object(line)
        if obj is None:
            return unparsed(line, "not a protocol line")
        if self.ended is not None:
            message = f"an event after {self.ended!r} (its turn had ended): {line[:200]}"
            return [Event(EventType.LOG, {"level": "warning", "message": message})]
        return self._map(obj)

    def _map(self, obj: dict[str, Any]) -> list[Event]:
        kind = obj.get("type")
        if kind in ENDS:
            self.ended = str(kind)
        match kind:
            case "session":
                return [Event(EventType.SESSION, {"id": str(obj.get("id", ""))})]
            case "text":
                return [events.text(str(obj.get("text", "")), delta=True)]
            case "tool":
                files = _strings(obj.get("files"))
                data: dict[str, Any] = {
                    "name": str(obj.get("name", "")),
                    "input": str(obj.get("input", " ".join(files))),
                    "files": files,
                }
                return [Event(EventType.TOOL, data)]
            case "tool_result":
                data = {
                    "name": str(obj.get("name", "")),
                    "ok": bool(obj.get("ok", True)),
                    "output": str(obj.get("output", "")),
                }
                return [Event(EventType.TOOL_RESULT, data)]
            case "usage":
                used = Usage.of(
                    input=obj.get("input", 0),
                    cached_input=obj.get("cached", 0),
                    output=obj.get("output", 0),
                    reasoning=obj.get("reasoning"),
                    cost=obj.get("cost"),
                )
                return [Event(EventType.USAGE, used.to_json())]
            case "final":
                return [Event(EventType.FINAL, {"text": str(obj.get("text", ""))})]
            case "question":
                return [Event(EventType.QUESTION, {"text": str(obj.get("text", ""))})]
            case "error":
                named = str(obj.get("kind") or "worker_error")
                kind_ = named if named in ERROR_KINDS else "worker_error"
                retry = obj.get("retry_after")
                after = float(retry) if isinstance(retry, int | float) else None
                return [events.error(kind_, str(obj.get("message", "")), retry_after=after)]
            case other:
                message = f"unknown protocol event {other!r}"
                return [Event(EventType.LOG, {"level": "warning", "message": message})]

    def finish(self, exit_code: int | None, stderr_tail: str) -> list[Event]:
        if self.ended is not None:
            if self.ended != "error" and exit_code not in (0, None):
                message = f"the adapter exited with code {exit_code} after {self.ended!r}"
                return [Event(EventType.LOG, {"level": "warning", "message": message})]
            return []
        self.ended = "error"
        how = f"exit code {exit_code}" if exit_code is not None else "an unknown exit status"
        message = f"the adapter stopped with {how} and no final, question or error"
        if stderr_tail.strip():
            message += f": {stderr_tail.strip()}"
        return [events.error("worker_error", message, exit_code=exit_code)]


class ExternalAdapter:
    """Provider ``external``: ``profile.options["argv"]`` speaking the adapter protocol."""

    provider = "external"

    def launch(self, turn: Turn, profile: Profile) -> Launch:
        argv = profile.options.get("argv")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise AgentNotFound(
                f"profile {profile.name!r} (provider external) needs options.argv, the "
                'program and its arguments, such as ["node", "my-adapter.js"]'
            )
        return Launch(
            argv=list(argv),
            env=dict(profile.env),
            cwd=turn.cwd,
            stdin=start_line(turn, turn.model or profile.model),
        )

    def parser(self) -> ExternalParser:
        return ExternalParser()
