"""The output schemas and hints of ``baton mcp``'s tools: what each answer holds.

Each tool answers with a text block (the compact JSON, or the diff's text, that the agent
reads) and the same answer as ``structuredContent``, which :data:`OUTPUT` describes. A list
answer (``tasks``, ``project``'s ``memory``) is an object there (``{"tasks": [...]}``):
structured content is always an object. Output schemas and annotations are for the agent's
client (it checks the answer, asks before a destructive call); clients hand the model only
each tool's name, description and input schema, so these cost the agent nothing per step.
"""

from __future__ import annotations

from typing import Any

from baton.core.lifecycle import TaskState

STATES: list[str] = [str(s) for s in TaskState]
#: The moves of the ``task`` tool, each the websocket method of the same name (``unarchive``
#: is ``archive`` with ``undo``): one tool for the moves a lead agent makes now and then.
ACTIONS: list[str] = [
    "reply", "steer", "answer", "cancel", "retry", "handoff", "complete", "edit", "archive",
    "unarchive",
]  # fmt: skip

_STR: dict[str, Any] = {"type": "string"}
_STRS: dict[str, Any] = {"type": "array", "items": _STR}
_OBJS: dict[str, Any] = {"type": "array", "items": {"type": "object"}}

#: A task's line: id, state, why (when the state does not say it), the moves that fit now.
LINE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": _STR,
        "state": {"type": "string", "enum": STATES},
        "worker": _STR,
        "completion": _STR,
        "message": _STR,
        "summary": _STR,
        "retryIn": {"type": "number"},
        "next": _STRS,
    },
    "required": ["id", "state", "next"],
}


def _obj(required: tuple[str, ...] = (), **properties: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = list(required)
    return out


_WATCH_TIMEOUT = _obj(("timeout", "tasks"), timeout={"type": "number"}, tasks={**_OBJS})
_ANSWERED = _obj(("taskId", "option"), taskId=_STR, permission=_STR, option=_STR)
#: What ``task`` answers: the task's line (reply, steer, cancel, retry, handoff, edit), the
#: answered permission, the completed task with its changed files, or the archived tasks.
_MOVED: list[dict[str, Any]] = [
    LINE,
    _ANSWERED,
    _obj(("task", "files"), task=LINE, files=_STRS),
    _obj(("tasks",), archived=_STRS, unarchived=_STRS, tasks={"type": "array", "items": LINE}),
]

#: The ``outputSchema`` of each tool.
OUTPUT: dict[str, dict[str, Any]] = {
    "delegate": LINE,
    "watch": {"type": "object", "anyOf": [LINE, _WATCH_TIMEOUT]},
    "inspect": _obj(
        ("state", "next"),
        state=LINE["properties"]["state"],
        completion=_STR,
        message=_STR,
        summary=_STR,
        attempts={"type": "integer"},
        diff=_STR,
        permissions=_OBJS,
        detail={"type": "object"},
        next=_STRS,
    ),
    "diff": _obj(("text",), text=_STR),
    "accept": _obj(("task",), task=LINE, applied=_STRS, conflicts=_OBJS, refused=_OBJS),
    "reject": _obj(("task",), task=LINE, rejected=_STRS),
    "task": {"type": "object", "anyOf": _MOVED},
    "ask": _obj(("task",), task=LINE, answer=_STR, timeout={"type": "number"}),
    "tasks": _obj(("tasks",), tasks={"type": "array", "items": LINE}),
    "project": _obj(
        task=LINE,
        question=_STR,
        nodes={"type": ["array", "null"]},
        problems=_STRS,
        tasks={"type": "object"},
        memory=_OBJS,
    ),
    "workers": _obj(("workers",), default=_STR, workers=_OBJS),
}

#: MCP tool annotations. Read-only tools change nothing; ``accept`` writes the project's
#: files, ``reject`` drops hunks, ``task`` may cancel (kill an agent) and ``project`` may
#: remove a fact, a default worker or what ``clean`` removes: destructive. The others add
#: (a task, an answer) and destroy nothing.
_READ_ONLY = {"readOnlyHint": True}
_DESTRUCTIVE = {"readOnlyHint": False, "destructiveHint": True}
_ADDITIVE = {"readOnlyHint": False, "destructiveHint": False}
ANNOTATIONS: dict[str, dict[str, bool]] = {
    **dict.fromkeys(("watch", "inspect", "diff", "tasks", "workers"), _READ_ONLY),
    **dict.fromkeys(("accept", "reject", "task", "project"), _DESTRUCTIVE),
    **dict.fromkeys(("delegate", "ask"), _ADDITIVE),
}
