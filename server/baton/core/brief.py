"""The brief: the instruction plus what Baton adds (selection, file, diagnostics, memory, rules)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Diagnostic:
    message: str
    start_line: int  # 1-based
    end_line: int
    severity: str = "error"
    code: str | None = None
    source: str | None = None


@dataclass(frozen=True, slots=True)
class Selection:
    path: str
    start_line: int  # 1-based, inclusive
    end_line: int
    text: str
    language: str = ""


@dataclass(frozen=True, slots=True)
class BriefParts:
    instruction: str
    action: str = "delegate"
    selection: Selection | None = None
    diagnostics: Sequence[Diagnostic] = ()
    memory: Sequence[str] = ()
    rules: Sequence[str] = ()
    scope: Sequence[str] = field(default_factory=tuple)


_ACTION_LEAD = {
    "delegate": "Make this change in the repository in your working directory.",
    "fix": "Fix the diagnostics listed below, changing as little as needed.",
    "explain": "Answer the question below. Do not change any file.",
    "tests": "Write tests for the selected code, following the project's existing test layout.",
    "run": "Make this change in the repository in your working directory.",
}


def build_brief(parts: BriefParts) -> str:
    """Plain text for the worker. Deterministic: the same parts give the same brief."""
    out = [_ACTION_LEAD.get(parts.action, _ACTION_LEAD["delegate"]), "", parts.instruction.strip()]
    sel = parts.selection
    if sel is not None:
        out += [
            "",
            f"Selected lines {sel.start_line}-{sel.end_line} of {sel.path}:",
            f"```{sel.language}",
            sel.text.rstrip("\n"),
            "```",
        ]
    if parts.diagnostics:
        out += ["", "Diagnostics:"]
        for d in parts.diagnostics:
            where = f"line {d.start_line}" + (
                f"-{d.end_line}" if d.end_line != d.start_line else ""
            )
            tag = " ".join(x for x in (d.source, f"[{d.code}]" if d.code else None) if x)
            out.append(f"- {where} {d.severity}{' ' + tag if tag else ''}: {d.message}")
    if parts.scope:
        out += ["", "Only change files matching: " + ", ".join(parts.scope)]
    if parts.memory:
        out += ["", "Project facts:"] + [f"- {m}" for m in parts.memory]
    if parts.rules:
        out += ["", "Rules:"] + [f"- {r}" for r in parts.rules]
    return "\n".join(out) + "\n"


def title_of(instruction: str, limit: int = 72) -> str:
    line = instruction.strip().splitlines()[0] if instruction.strip() else "(no instruction)"
    return line if len(line) <= limit else line[: limit - 1] + "…"
