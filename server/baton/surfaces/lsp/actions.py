"""Code actions: "Delegate selection…", "Fix these diagnostics", "Explain selection" and
"Write tests for selection", each a ``baton.delegate`` command, and "Ask Baton…", a
``baton.ask`` (:mod:`baton.surfaces.lsp.questions`); nothing runs until chosen.

The command's one argument is ``{uri, range, kind, instruction?, diagnostics?}``; "Delegate
selection…" carries no instruction, so the client asks for one (rich clients with an input
box, plain clients through the server's ``window/showMessageRequest``).
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from baton.surfaces.lsp.payloads import invalid
from baton.surfaces.lsp.questions import ASK_KIND
from baton.surfaces.lsp.questions import code_action as ask_action

DELEGATE = "baton.delegate"

#: (kind of task, code-action kind, title, default instruction or None = ask).
ACTIONS: tuple[tuple[str, str, str, str | None], ...] = (
    ("delegate", "refactor.rewrite.baton", "Baton: Delegate selection…", None),
    ("explain", "refactor.baton.explain", "Baton: Explain selection", None),
    ("tests", "refactor.baton.tests", "Baton: Write tests for selection", None),
)
FIX_KIND = "quickfix.baton"

#: What the task is asked when the command carries no instruction.
DEFAULT_INSTRUCTIONS: dict[str, str] = {
    "fix": "Fix these diagnostics.",
    "explain": "Explain the selected code: what it does, how, and anything surprising.",
    "tests": "Write tests for the selected code.",
}

#: Ready-made instructions offered by ``window/showMessageRequest`` to plain clients.
SUGGESTIONS: tuple[str, ...] = (
    "Refactor this for readability, keeping behaviour the same",
    "Add type hints and docstrings",
    "Add error handling for the failure cases",
    "Simplify this code",
    "Optimize this code for speed",
)


def wanted(kind: str, only: list[str] | None) -> bool:
    if not only:
        return True
    return any(kind == o or kind.startswith(o + ".") for o in only)


def _range_json(rng: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": rng.start.line, "character": rng.start.character},
        "end": {"line": rng.end.line, "character": rng.end.character},
    }


def _diagnostic_json(d: types.Diagnostic) -> dict[str, Any]:
    out: dict[str, Any] = {"range": _range_json(d.range), "message": d.message}
    if d.severity is not None:
        out["severity"] = int(d.severity)
    if d.code is not None:
        out["code"] = d.code
    if d.source is not None:
        out["source"] = d.source
    return out


def code_actions(params: types.CodeActionParams, line_count: int | None) -> list[types.CodeAction]:
    """The Baton actions for a range of a document (``line_count`` None: not open)."""
    rng = params.range
    start, end = rng.start, rng.end
    if (start.line, start.character) > (end.line, end.character):
        raise invalid("codeAction: the range starts after it ends")
    if line_count is not None and start.line > line_count:
        raise invalid(f"codeAction: line {start.line} is past the end ({line_count} lines)")
    uri = params.text_document.uri
    if not uri.startswith("file:"):
        return []
    only = [str(k) for k in params.context.only] if params.context.only else None
    out: list[types.CodeAction] = []
    diagnostics = list(params.context.diagnostics or [])
    if diagnostics and wanted(FIX_KIND, only):
        n = len(diagnostics)
        args = {
            "uri": uri,
            "range": _range_json(rng),
            "kind": "fix",
            "instruction": DEFAULT_INSTRUCTIONS["fix"],
            "diagnostics": [_diagnostic_json(d) for d in diagnostics],
        }
        out.append(
            types.CodeAction(
                title=f"Baton: Fix {'this diagnostic' if n == 1 else f'these {n} diagnostics'}",
                kind=FIX_KIND,
                diagnostics=diagnostics,
                command=types.Command(title="Fix with Baton", command=DELEGATE, arguments=[args]),
            )
        )
    for kind, action_kind, title, instruction in ACTIONS:
        if not wanted(action_kind, only):
            continue
        args = {"uri": uri, "range": _range_json(rng), "kind": kind}
        if instruction is not None:
            args["instruction"] = instruction
        out.append(
            types.CodeAction(
                title=title,
                kind=action_kind,
                command=types.Command(title=title, command=DELEGATE, arguments=[args]),
            )
        )
    if wanted(ASK_KIND, only):
        out.append(ask_action(uri, rng, _range_json(rng)))
    return out
