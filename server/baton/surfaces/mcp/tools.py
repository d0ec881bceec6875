"""The tool list ``baton mcp`` offers: short descriptions, each parameter described.

A lead agent's client hands the model every tool's name, description and input schema with
every request, so those are kept lean by hand (generated schemas spell a title and a null
alternative for each parameter): a few words a parameter, enums for closed sets, no type
where the description says it (strings, numbers: the server checks them), nothing the
instructions already say; and the user may offer fewer tools (``baton mcp --tools
delegate,watch,inspect,diff,accept``). Each definition also carries its output schema and
hints (:mod:`baton.surfaces.mcp.schemas`), which the client reads and the model does not.
``baton mcp --print-tools`` shows the list and its size as :func:`size` counts it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from baton.core.routing import KINDS
from baton.errors import InvalidInput
from baton.surfaces.mcp.project import OPS
from baton.surfaces.mcp.schemas import ACTIONS, ANNOTATIONS, OUTPUT, STATES
from baton.surfaces.ws.answers import DETAILS

INSTRUCTIONS = (
    "Baton runs coding tasks in the background, each in its own git worktree, done by an agent "
    "that sees only your instruction. Flow: delegate (returns an id; a unique prefix of 4+ "
    "characters does), watch, inspect or diff, accept or reject. Every task carries next: the "
    "moves that fit now (those that are no tool are actions of task)."
)

#: The fields of a tool definition that clients pass on to the model (and what :func:`size`
#: counts); ``outputSchema`` and ``annotations`` stay with the client.
MODEL_FIELDS = ("name", "description", "inputSchema")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    properties: dict[str, dict[str, Any]]
    required: tuple[str, ...] = ()

    def definition(self) -> dict[str, Any]:
        """The tool as ``tools/list`` shows it."""
        schema: dict[str, Any] = {"type": "object"}
        if self.properties:  # a tool without parameters needs no empty "properties"
            schema["properties"] = self.properties
        if self.required:
            schema["required"] = list(self.required)
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": schema,
            "outputSchema": OUTPUT[self.name],
            "annotations": ANNOTATIONS[self.name],
        }


def _s(description: str) -> dict[str, Any]:
    """A string parameter. Its type goes without saying (``"type": "string"`` would cost 16
    characters a parameter on every request); the server checks it: a number is refused."""
    return {"description": description}


def _num(description: str) -> dict[str, Any]:
    """A number parameter. Its type goes unsaid too: the description names a quantity, and
    the server reads ``"60"`` as 60 and refuses ``"soon"``."""
    return {"description": description}


def _list(description: str) -> dict[str, Any]:
    """A list-of-strings parameter (the strings' type, as for :func:`_s`, goes unsaid)."""
    return {"type": "array", "description": description}


def _enum(description: str, values: Sequence[str]) -> dict[str, Any]:
    """One of ``values`` (a string: the enum says so)."""
    return {"enum": list(values), "description": description}


_TASK = _s("task")
_HUNKS = {"id": _TASK, "hunks": _list("default all")}

TOOLS: dict[str, ToolSpec] = {
    t.name: t
    for t in (
        ToolSpec(
            "delegate",
            "Start a task.",
            {
                "instruction": _s("the work"),
                "worker": _s("profile"),
                "kind": _enum("routing", [k for k in KINDS if k != "ask"]),
                "scope": _list("writable globs"),
            },
            ("instruction",),
        ),
        ToolSpec(
            "watch",
            "Wait until one settles.",
            {"ids": _list("task ids"), "timeout": _num("seconds")},
            ("ids",),
        ),
        ToolSpec(
            "inspect",
            "State and result.",
            {"id": _TASK, "detail": _enum("add section", ["all", *DETAILS])},
        ),
        ToolSpec(
            "diff", "The change, with hunk ids.", {"id": _TASK, "offset": _num("after a cut")}
        ),
        ToolSpec("accept", "Apply hunks to your files.", _HUNKS),
        ToolSpec("reject", "Drop hunks.", _HUNKS),
        ToolSpec(
            "task",
            "Move a task on. text: reply, guidance, permission option (allow, reject, id), "
            "evidence of done, or new instruction.",
            {
                "id": _TASK,
                "action": _enum("move", ACTIONS),
                "text": _s("see above"),
                "worker": _s("handoff or edit to"),
            },
            ("id", "action"),
        ),
        ToolSpec(
            "ask",
            "Ask a cheap worker about the project; read-only.",
            {"question": _s("the question")},
            ("question",),
        ),
        ToolSpec(
            "tasks",
            "Recent tasks.",
            {
                "state": {"type": "array", "items": {"enum": STATES}, "description": "filter"},
                "text": _s("search"),
                "limit": _num("default 20"),
            },
        ),
        ToolSpec(
            "project",
            "plan a goal as a task graph, approve it; love: default worker; clean; memory; health.",
            {
                "op": _enum("what", list(OPS)),
                "text": _s("goal, or fact to add"),
                "id": _s("planner, or fact"),
                "nodes": _list("edited plan"),
                "worker": _s("planner; to love"),
            },
            ("op",),
        ),
        ToolSpec("workers", "Agent profiles.", {}),
    )
}


class UnknownTool(InvalidInput, ValueError):
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


def model_view(definition: dict[str, Any]) -> dict[str, Any]:
    """The part of a tool definition a client passes on to the model."""
    return {k: definition[k] for k in MODEL_FIELDS if k in definition}


def size(definitions: Iterable[dict[str, Any]]) -> int:
    """Characters of the tool list as compact JSON, as a client hands it to the model with
    every request: names, descriptions, input schemas (the measure ``--print-tools``
    reports)."""
    return len(_compact([model_view(d) for d in definitions]))


def wire_size(definitions: Iterable[dict[str, Any]]) -> int:
    """Characters of the whole ``tools/list`` answer (output schemas and hints too)."""
    return len(_compact(list(definitions)))


def _compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def report(tools: Sequence[ToolSpec]) -> str:
    """One line per tool (its characters and description), then the total."""
    rows = [f"{t.name:<9} {size([t.definition()]) - 2:>5}  {t.description}" for t in tools]
    total = size(t.definition() for t in tools)
    wire = wire_size(t.definition() for t in tools)
    rows.append(
        f"{len(tools)} tools, {total:,} characters of definitions "
        f"(+{len(INSTRUCTIONS)} of instructions; {wire:,} with output schemas and hints, "
        "which the model does not see)"
    )
    return "\n".join(rows)
