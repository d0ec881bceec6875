"""The fake agent's script: JSON that says what the fake agent does, step by step.

A script is ``{"steps": [...], "summary": "..."}``; the steps and the fields each may carry
are listed in :data:`STEP_FIELDS`. A first turn's script comes from the file named by
``BATON_FAKE_SCRIPT`` (a profile's ``script`` option), else from a fenced block in the
prompt (```` ```baton-fake ````), else :func:`default_script`, which just answers.
:func:`parse_script` refuses a script that is not valid JSON or not a list of known steps
with the right values (:class:`BrokenScript` says where). The program that plays a script
is :mod:`baton.agents.fake_agent`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from baton.errors import InvalidInput

FENCE = re.compile(r"```baton-fake[ \t]*\r?\n(.*?)```", re.DOTALL)

#: Each step's key and the other fields it may carry.
STEP_FIELDS: dict[str, frozenset[str]] = {
    "say": frozenset({"chunks", "delay"}),
    "write": frozenset({"content"}),
    "edit": frozenset({"old", "new"}),
    "append": frozenset({"text"}),
    "delete": frozenset(),
    "rename": frozenset(),
    "read": frozenset(),
    "sleep": frozenset(),
    "ask": frozenset(),
    "rate_limit": frozenset(),
    "error": frozenset({"exit"}),
    "hang": frozenset(),
    "crash": frozenset(),
    "spawn_sleeper": frozenset(),
    "escape": frozenset({"content"}),
    "stream": frozenset({"rate", "size"}),
    "usage": frozenset(),
    "end_turn": frozenset(),
}

Step = dict[str, Any]


class BrokenScript(InvalidInput, ValueError):
    """The script is not valid JSON or not a list of known steps."""


def _is_num(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def _check_step(index: int, step: object) -> None:
    where = f"step {index + 1}"
    if not isinstance(step, dict):
        raise BrokenScript(f"{where} is not an object: {step!r}")
    kinds = [k for k in step if k in STEP_FIELDS]
    if len(kinds) != 1:
        known = ", ".join(STEP_FIELDS)
        raise BrokenScript(f"{where} needs exactly one of {known}; got {sorted(step)}")
    kind = kinds[0]
    extra = set(step) - {kind} - STEP_FIELDS[kind]
    if extra:
        raise BrokenScript(f"{where} ({kind}) has unknown fields {sorted(extra)}")
    value = step[kind]
    ok = True
    match kind:
        case (
            "say"
            | "write"
            | "edit"
            | "append"
            | "delete"
            | "read"
            | "ask"
            | "spawn_sleeper"
            | "escape"
            | "end_turn"
        ):
            ok = isinstance(value, str)
            ok = ok and all(isinstance(step.get(k, ""), str) for k in ("content", "text"))
            if kind == "edit":
                ok = ok and isinstance(step.get("old"), str) and isinstance(step.get("new"), str)
            if kind == "say":
                chunks = step.get("chunks", 1)
                ok = ok and isinstance(chunks, int) and chunks >= 1
                ok = ok and _is_num(step.get("delay", 0))
        case "rename":
            ok = isinstance(value, list) and len(value) == 2
            ok = ok and all(isinstance(v, str) for v in value)
        case "sleep":
            ok = _is_num(value)
        case "rate_limit":
            ok = isinstance(value, dict) and len(value) == 1
            ok = ok and any(_is_num(value.get(k)) for k in ("resets_in", "retry_after"))
        case "error":
            ok = isinstance(value, dict) and isinstance(value.get("kind", ""), str)
            ok = ok and isinstance(value.get("message", ""), str)
            ok = ok and isinstance(step.get("exit", 1), int)
        case "hang":
            ok = value is True
        case "crash":
            ok = isinstance(value, int) and not isinstance(value, bool)
        case "stream":
            ok = isinstance(value, int) and value >= 0
            ok = ok and _is_num(step.get("rate", 100)) and step.get("rate", 100) > 0
            ok = ok and isinstance(step.get("size", 64), int) and step.get("size", 64) >= 1
        case "usage":
            ok = isinstance(value, dict)
            ok = ok and all(_is_num(value.get(k, 0)) for k in ("input", "output"))
            ok = ok and (value.get("cost") is None or _is_num(value["cost"]))
    if not ok:
        raise BrokenScript(f"{where} ({kind}) has a wrong value: {json.dumps(step)}")


def parse_script(text: str) -> dict[str, Any]:
    """A validated script from its JSON text, or :class:`BrokenScript` saying what is wrong."""
    try:
        script = json.loads(text)
    except ValueError as exc:
        raise BrokenScript(f"not JSON: {exc}") from None
    if not isinstance(script, dict) or not isinstance(script.get("steps"), list):
        raise BrokenScript('a script is an object {"steps": [...], "summary": "..."}')
    unknown = set(script) - {"steps", "summary"}
    if unknown:
        raise BrokenScript(f"unknown script fields {sorted(unknown)}")
    if not isinstance(script.get("summary", ""), str):
        raise BrokenScript("summary must be a string")
    for index, step in enumerate(script["steps"]):
        _check_step(index, step)
    return script


def default_script(prompt: str) -> dict[str, Any]:
    """The script of a prompt that brings none: say its first line back."""
    first = next((line.strip() for line in prompt.splitlines() if line.strip()), "")
    answer = f"fake agent: {first[:200]}" if first else "fake agent: nothing to do"
    return {"steps": [{"say": answer}], "summary": answer}


def script_for(prompt: str) -> dict[str, Any]:
    """The script of a first turn: $BATON_FAKE_SCRIPT (a profile that always plays one
    script, e.g. a reviewer, whatever its prompt quotes), else fenced in the prompt, else
    the default."""
    path = os.environ.get("BATON_FAKE_SCRIPT")
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise BrokenScript(f"cannot read BATON_FAKE_SCRIPT {path}: {exc.strerror}") from None
        return parse_script(text)
    fenced = FENCE.search(prompt)
    if fenced:
        return parse_script(fenced.group(1))
    return default_script(prompt)
