"""Independent review: the brief a reviewer gets, and reading its verdict. Pure, no I/O."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from baton.core.diff import FileDiff, split_lines

APPROVE = "approve"
REQUEST_CHANGES = "request_changes"


@dataclass(frozen=True, slots=True)
class Finding:
    path: str
    line: int  # 1-based, in the proposed (new) file
    message: str
    severity: str = "warning"  # error | warning | info


@dataclass(frozen=True, slots=True)
class Verdict:
    verdict: str  # approve | request_changes
    findings: tuple[Finding, ...] = ()
    summary: str = ""
    readable: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "findings": [asdict(f) for f in self.findings],
            "summary": self.summary,
            "readable": self.readable,
        }


def review_brief(instruction: str, files: Sequence[FileDiff]) -> str:
    """What the reviewer is asked: the task's instruction and the change, hunk by hunk."""
    out = [
        "Review a change another agent made for this request. Do not change any file.",
        "",
        "Request:",
        instruction.strip(),
        "",
        "The change (line numbers are those of the proposed files):",
    ]
    for f in files:
        out.append(f"--- {f.old_path or f.path}\n+++ {f.path} ({f.status})")
        for h in f.hunks:
            out.append(f"@@ -{h.old_start},{h.old_count} +{h.new_start},{h.new_count} @@")
            out += ["-" + line.rstrip("\r\n") for line in split_lines(h.old_text)]
            out += ["+" + line.rstrip("\r\n") for line in split_lines(h.new_text)]
    out += [
        "",
        "Answer with one JSON object and nothing else:",
        '{"verdict": "approve" | "request_changes", "summary": "...", "findings": '
        '[{"path": "...", "line": 1, "severity": "error" | "warning" | "info", '
        '"message": "..."}]}',
        "Request changes only for real defects (bugs, missing cases, broken behaviour).",
    ]
    return "\n".join(out) + "\n"


_FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


def parse_verdict(text: str) -> Verdict:
    """The reviewer's answer; an unreadable one is a ``request_changes`` saying so."""
    for candidate in _candidates(text):
        try:
            obj = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("verdict") in (APPROVE, REQUEST_CHANGES):
            return Verdict(
                verdict=str(obj["verdict"]),
                findings=tuple(_findings(obj.get("findings"))),
                summary=str(obj.get("summary") or ""),
            )
    return Verdict(
        REQUEST_CHANGES,
        summary="the reviewer's answer could not be read: " + text.strip()[:200],
        readable=False,
    )


def _candidates(text: str) -> list[str]:
    found = [m.group(1) for m in _FENCED.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        found.append(text[start : end + 1])
    return found


def _findings(raw: object) -> list[Finding]:
    out = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            continue
        try:
            line = max(1, int(item.get("line", 1)))
        except (TypeError, ValueError):
            line = 1
        severity = str(item.get("severity", "warning"))
        if severity not in ("error", "warning", "info"):
            severity = "warning"
        out.append(Finding(item["path"], line, str(item.get("message", "")), severity))
    return out


def repair_brief(verdict: Verdict) -> str:
    lines = ["An independent reviewer requested changes to your work. Address each finding:"]
    if verdict.summary:
        lines.append(verdict.summary)
    lines += [f"- {f.path}:{f.line} ({f.severity}): {f.message}" for f in verdict.findings]
    return "\n".join(lines) + "\n"
