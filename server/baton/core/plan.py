"""A planner's task graph (``baton plan``): the brief that asks a worker for one, and the
checks a proposed graph must pass before anyone is asked to approve it.

The worker answers with a JSON list of nodes — ``{"key", "instruction", "after": [keys],
"worker"?, "scope"?: [globs], "kind"?}`` — in its final text (alone, or in a fenced ``json``
block). :func:`parse` finds it; :func:`problems` says everything wrong with it: the shape,
unknown or repeated keys, cycles, workers the project's policy does not allow, and two
nodes that may run at once (neither comes after the other) whose scopes could write the
same files — a node without a scope may write anywhere.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from baton.core.kinds import KINDS

#: The most nodes a plan may have (a planner is for a handful of tasks, not a backlog).
MAX_NODES = 20
FIELDS = ("key", "instruction", "after", "worker", "scope", "kind")
SCHEMA: dict[str, Any] = {
    "type": "array",
    "maxItems": MAX_NODES,
    "items": {
        "type": "object",
        "required": ["key", "instruction"],
        "additionalProperties": False,
        "properties": {
            "key": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]{0,39}$"},
            "instruction": {"type": "string", "minLength": 1},
            "after": {"type": "array", "items": {"type": "string"}},
            "worker": {"type": "string"},
            "scope": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "kind": {"enum": list(KINDS)},
        },
    },
}
_KEY = re.compile(SCHEMA["items"]["properties"]["key"]["pattern"])
_FENCED = re.compile(r"```(?:json)?[ \t]*\r?\n(.*?)```", re.DOTALL)


def brief(goal: str, workers: Sequence[str]) -> str:
    """The planner's instruction: the goal, the schema, the rules."""
    return "\n".join(
        [
            "Plan this goal as a small graph of coding tasks for other agents to carry out:",
            "",
            goal.strip(),
            "",
            "Read the project as you need to, but change no file. Answer with only a JSON list"
            " of nodes matching this JSON schema:",
            json.dumps(SCHEMA),
            "",
            "- Each node is one task an agent can do alone; `after` names the nodes whose"
            " changes it needs (they are accepted before it starts).",
            "- Nodes that may run at the same time must have `scope` globs that cannot match"
            " the same file; a node without `scope` may write anywhere.",
            f"- `worker`, when given, is one of: {', '.join(workers) or '(any)'}.",
            "- If the goal leaves a decision open that you cannot take, do not guess: ask the"
            " user one question instead of answering with a plan.",
        ]
    )


def parse(text: str) -> list[Any]:
    """The JSON list in a planner's answer (the whole text, or its first fenced block that
    holds one); ValueError saying why when there is none."""
    candidates = [text.strip(), *(m.group(1).strip() for m in _FENCED.finditer(text))]
    for candidate in candidates:
        try:
            found = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(found, list):
            return found
    raise ValueError("the planner's answer holds no JSON list of nodes")


def _literal(glob: str) -> str:
    """The part of ``glob`` before its first wildcard."""
    cut = min((i for i, ch in enumerate(glob) if ch in "*?["), default=len(glob))
    return glob[:cut].lstrip("./")


def scopes_meet(a: Iterable[str] | None, b: Iterable[str] | None) -> bool:
    """Whether two write scopes could match the same file (None: anywhere). Conservative:
    globs meet when the literal part of one is a prefix of the other's."""
    if a is None or b is None:
        return True
    return any(
        _literal(x).startswith(_literal(y)) or _literal(y).startswith(_literal(x))
        for x in a
        for y in b
    )


def _shape(i: int, node: object) -> list[str]:
    where = f"node {i + 1}"
    if not isinstance(node, dict):
        return [f"{where} is not an object"]
    out = [f"{where}: unknown field {k!r}" for k in node if k not in FIELDS]
    key = node.get("key")
    if not isinstance(key, str) or not _KEY.match(key):
        out.append(f"{where}: key must be a short lower-case name ({_KEY.pattern})")
    if not isinstance(node.get("instruction"), str) or not node["instruction"].strip():
        out.append(f"{where}: instruction must be a non-empty string")
    for name in ("after", "scope"):
        value = node.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            out.append(f"{where}: {name} must be a list of strings")
    if "scope" in node and node["scope"] == []:
        out.append(f"{where}: scope must name at least one glob (or be left out)")
    if "worker" in node and not isinstance(node["worker"], str):
        out.append(f"{where}: worker must be a string")
    if "kind" in node and node["kind"] not in KINDS:
        out.append(f"{where}: kind must be one of {', '.join(KINDS)}")
    return out


def _reach(nodes: Sequence[dict[str, Any]]) -> dict[str, set[str]]:
    """Each key's nodes it comes after, directly or not (the graph has no cycle)."""
    after = {n["key"]: set(n.get("after", [])) for n in nodes}
    reach: dict[str, set[str]] = {}

    def of(key: str) -> set[str]:
        if key not in reach:
            reach[key] = set()
            for dep in after[key]:
                reach[key] |= {dep, *of(dep)}
        return reach[key]

    for key in after:
        of(key)
    return reach


def _cycle(nodes: Sequence[dict[str, Any]]) -> list[str] | None:
    after = {n["key"]: list(n.get("after", [])) for n in nodes}
    state: dict[str, int] = {}

    def visit(key: str, path: list[str]) -> list[str] | None:
        if state.get(key) == 2:
            return None
        if state.get(key) == 1:
            return [*path, key]
        state[key] = 1
        for dep in after.get(key, []):
            found = visit(dep, [*path, key])
            if found:
                return found
        state[key] = 2
        return None

    for key in after:
        found = visit(key, [])
        if found:
            return found
    return None


def problems(plan: object, workers: Iterable[str]) -> list[str]:
    """Everything wrong with ``plan``, for the planner or the user to read; [] when it can
    run as a graph. ``workers``: the profiles the project's policy allows."""
    if not isinstance(plan, list) or not plan:
        return ["a plan is a non-empty JSON list of nodes"]
    if len(plan) > MAX_NODES:
        return [f"a plan has at most {MAX_NODES} nodes, not {len(plan)}"]
    out = [p for i, n in enumerate(plan) for p in _shape(i, n)]
    if out:
        return out
    nodes: list[dict[str, Any]] = plan
    keys = [n["key"] for n in nodes]
    out += [f"key {k!r} is used twice" for k in sorted({k for k in keys if keys.count(k) > 1})]
    allowed = set(workers)
    for n in nodes:
        out += [f"{n['key']}: comes after unknown node {d!r}" for d in n.get("after", [])
                if d not in keys]  # fmt: skip
        if "worker" in n and n["worker"] not in allowed:
            out.append(
                f"{n['key']}: worker {n['worker']!r} is not allowed here "
                f"(allowed: {', '.join(sorted(allowed)) or 'none'})"
            )
    if out:
        return out
    cycle = _cycle(nodes)
    if cycle:
        return ["the plan has a cycle: " + " → ".join(cycle)]
    reach = _reach(nodes)
    for i, a in enumerate(nodes):
        for b in nodes[i + 1 :]:
            ordered = a["key"] in reach[b["key"]] or b["key"] in reach[a["key"]]
            if not ordered and scopes_meet(a.get("scope"), b.get("scope")):
                out.append(
                    f"{a['key']} and {b['key']} may run at once and could write the same files:"
                    " give them scopes that do not overlap, or make one come after the other"
                )
    return out
