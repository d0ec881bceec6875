"""The tool list ``baton mcp`` offers: short descriptions, parameters by name and enum.

A lead agent's client sends every tool definition with every request, so the list is kept
lean by hand (generated schemas spell a title and a null alternative for each parameter) and
the user may offer fewer tools (``baton mcp --tools delegate,watch,inspect,diff,accept``).
``baton mcp --print-tools`` shows the list and its size as :func:`size` counts it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from baton.surfaces.ws.answers import DETAILS

INSTRUCTIONS = (
    "Baton runs coding tasks in the background, each in its own git worktree. delegate "
    "returns an id; watch waits for the first task to settle; inspect and diff show the "
    "result; accept or reject its hunks. Every task carries next: the moves that fit now."
)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    properties: dict[str, dict[str, Any]]
    required: tuple[str, ...] = ()

    def definition(self) -> dict[str, Any]:
        """The tool as ``tools/list`` shows it."""
        schema: dict[str, Any] = {"type": "object", "properties": self.properties}
        if self.required:
            schema["required"] = list(self.required)
        return {"name": self.name, "description": self.description, "inputSchema": schema}


def _s(description: str = "", **extra: Any) -> dict[str, Any]:
    """A string parameter."""
    return {"type": "string", **({"description": description} if description else {}), **extra}


def _list(description: str = "", **items: Any) -> dict[str, Any]:
    """A list-of-strings parameter."""
    out: dict[str, Any] = {"type": "array", "items": {"type": "string", **items}}
    if description:
        out["description"] = description
    return out


_ID = {"id": _s()}
_TEXT = {"id": _s(), "text": _s()}
_HUNKS = {"id": _s(), "hunks": _list()}
_INT = {"type": "integer"}

TOOLS: dict[str, ToolSpec] = {
    t.name: t
    for t in (
        ToolSpec(
            "delegate",
            "Start a task in its own git worktree; returns its id. scope: globs it may write.",
            {"instruction": _s(), "worker": _s(), "scope": _list()},
            ("instruction",),
        ),
        ToolSpec(
            "watch",
            "Wait for the first of these tasks to settle or be rate limited.",
            {"ids": _list(), "timeout": {"type": "number"}},
            ("ids",),
        ),
        ToolSpec(
            "inspect",
            "State, summary line, counts, next moves; detail adds a section.",
            {"id": _s(), "detail": _s(enum=["all", *DETAILS])},
        ),
        ToolSpec("diff", "The change as unified diff with hunk ids.", {"id": _s(), "offset": _INT}),
        ToolSpec("accept", "Apply the pending hunks, or those named.", _HUNKS),
        ToolSpec("reject", "Drop the pending hunks, or those named.", _HUNKS),
        ToolSpec("reply", "Answer a task's question, or ask a reviewed task for changes.", _TEXT),
        ToolSpec("steer", "Give a running task new guidance.", _TEXT),
        ToolSpec("cancel", "Stop a task.", _ID),
        ToolSpec("retry", "Run a failed or cancelled task again.", _ID),
        ToolSpec(
            "tasks",
            "Recent tasks, newest first; text searches.",
            {"state": _list(), "text": _s(), "limit": _INT},
        ),
        ToolSpec(
            "memory",
            "Project facts put into every brief.",
            {"op": _s(enum=["list", "add", "remove"]), "text": _s(), "id": _INT},
        ),
        ToolSpec("workers", "The workers tasks can go to, and their models.", {}),
        ToolSpec("health", "The broker's state.", {}),
    )
}


class UnknownTool(ValueError):
    """``--tools`` named a tool Baton does not have."""


def chosen(names: str | Sequence[str] | None) -> list[ToolSpec]:
    """The tools to offer: all, or those named (comma-separated or a list), in list order."""
    if names is None:
        return list(TOOLS.values())
    wanted = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
    wanted = [n for n in wanted if n]
    unknown = [n for n in wanted if n not in TOOLS]
    if unknown or not wanted:
        what = f"unknown tool {unknown[0]!r}" if unknown else "no tool named"
        raise UnknownTool(f"{what}; Baton's tools: {', '.join(TOOLS)}")
    return [t for t in TOOLS.values() if t.name in wanted]


def size(definitions: Iterable[dict[str, Any]]) -> int:
    """Characters of the tool list as compact JSON, as a client sends it on (the measure
    ``--print-tools`` reports)."""
    return len(_compact(list(definitions)))


def _compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def report(tools: Sequence[ToolSpec]) -> str:
    """One line per tool (its characters and description), then the total."""
    rows = [f"{t.name:<9} {len(_compact(t.definition())):>5}  {t.description}" for t in tools]
    total = size(t.definition() for t in tools)
    rows.append(
        f"{len(tools)} tools, {total:,} characters of definitions "
        f"(+{len(INSTRUCTIONS)} of instructions)"
    )
    return "\n".join(rows)
