"""Reading ``workspace/executeCommand`` arguments: one JSON object, checked field by field.

Every command takes ``arguments: [ {...} ]`` (commands without required fields also take
``[]``). A payload of the wrong shape is refused with an ``InvalidParams`` error naming the
field, never half-used.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from baton.core.brief import Diagnostic
from baton.core.lifecycle import NEXT_MOVES, TaskState

_MAX_INT = 2**31 - 1
_SEVERITY = {1: "error", 2: "warning", 3: "information", 4: "hint"}


def invalid(message: str) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Args:
    """The one object argument of a command."""

    def __init__(self, command: str, args: Sequence[Any], *, optional: bool = False) -> None:
        self.command = command
        if not args and optional:
            self.obj: dict[str, Any] = {}
        elif len(args) == 1 and isinstance(args[0], dict):
            self.obj = args[0]
        else:
            raise invalid(f"{command} takes one object argument, got {_show(list(args))}")

    def _bad(self, key: str, what: str) -> JsonRpcInvalidParams:
        return invalid(f"{self.command}: {key} must be {what}, got {_show(self.obj.get(key))}")

    def text(self, key: str) -> str:
        value = self.obj.get(key)
        if not isinstance(value, str) or not value.strip():
            raise self._bad(key, "a non-empty string")
        return value

    def optional_text(self, key: str) -> str | None:
        if self.obj.get(key) is None:
            return None
        return self.text(key)

    def task_id(self) -> str:
        value = self.text("taskId")
        if len(value) > 64 or not value.isalnum():
            raise self._bad("taskId", "a task id (letters and digits)")
        return value

    def texts(self, key: str) -> list[str] | None:
        value = self.obj.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self._bad(key, "a list of non-empty strings")
        return list(value)

    def flag(self, key: str) -> bool:
        """A boolean argument (false when absent)."""
        value = self.obj.get(key, False)
        if not isinstance(value, bool):
            raise self._bad(key, "true or false")
        return value

    def integer(self, key: str, low: int, high: int) -> int | None:
        value = self.obj.get(key)
        if value is None:
            return None
        if not _is_int(value) or not low <= value <= high:
            raise self._bad(key, f"an integer from {low} to {high}")
        return int(value)

    def amount(self, key: str) -> float | None:
        """A number ≥ 0 (an integer or not), or None when absent."""
        value = self.obj.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            raise self._bad(key, "a number ≥ 0")
        return float(value)

    def choice(self, key: str, choices: Sequence[str], default: str) -> str:
        value = self.obj.get(key, default)
        if value is None:
            return default
        if value not in choices:
            raise self._bad(key, "one of " + ", ".join(choices))
        return str(value)

    def range(self, key: str) -> types.Range | None:
        value = self.obj.get(key)
        if value is None:
            return None
        rng = parse_range(value)
        if rng is None:
            raise self._bad(key, "a range {start: {line, character}, end: {line, character}}")
        return rng

    def diagnostics(self, key: str) -> list[Diagnostic]:
        value = self.obj.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self._bad(key, "a list of LSP diagnostics")
        out = []
        for item in value:
            diag = parse_diagnostic(item)
            if diag is None:
                raise invalid(f"{self.command}: not an LSP diagnostic: {_show(item)}")
            out.append(diag)
        return out


def parse_position(value: object) -> types.Position | None:
    if not isinstance(value, dict):
        return None
    line, char = value.get("line"), value.get("character")
    if not (_is_int(line) and _is_int(char)):
        return None
    assert isinstance(line, int) and isinstance(char, int)
    if not (0 <= line <= _MAX_INT and 0 <= char <= _MAX_INT):
        return None
    return types.Position(line, char)


def parse_range(value: object) -> types.Range | None:
    """A range whose start is not after its end, or None."""
    if not isinstance(value, dict):
        return None
    start, end = parse_position(value.get("start")), parse_position(value.get("end"))
    if start is None or end is None or (start.line, start.character) > (end.line, end.character):
        return None
    return types.Range(start, end)


def parse_diagnostic(value: object) -> Diagnostic | None:
    """An LSP diagnostic (JSON) as the brief carries it (1-based lines), or None."""
    if not isinstance(value, dict):
        return None
    rng = parse_range(value.get("range"))
    message = value.get("message")
    if rng is None or not isinstance(message, str) or not message.strip():
        return None
    severity = value.get("severity", 1)
    code, source = value.get("code"), value.get("source")
    if severity not in _SEVERITY or isinstance(severity, bool):
        return None
    if code is not None and not (isinstance(code, str) or _is_int(code)):
        return None
    if source is not None and not isinstance(source, str):
        return None
    return Diagnostic(
        message=message.strip(),
        start_line=rng.start.line + 1,
        end_line=last_line(rng) + 1,
        severity=_SEVERITY[severity],
        code=None if code is None else str(code),
        source=source,
    )


def last_line(rng: types.Range) -> int:
    """The last line (0-based) a range covers: an end at column 0 does not cover its line."""
    if rng.end.character == 0 and rng.end.line > rng.start.line:
        return rng.end.line - 1
    return rng.end.line


def _show(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- raw request params, checked before pygls reads them ------------------------------------
# (the converter is lenient: it turns 5 into "5" and "3" into 3; malformed input must fail)


def _check_position(value: object, where: str) -> str | None:
    if parse_position(value) is None:
        return f"{where} must be {{line, character}} with integers from 0 to {_MAX_INT}"
    return None


def _check_range(value: object, where: str) -> str | None:
    if not isinstance(value, dict):
        return f"{where} must be an object"
    for end in ("start", "end"):
        problem = _check_position(value.get(end), f"{where}.{end}")
        if problem:
            return problem
    if parse_range(value) is None:
        return f"{where} starts after it ends"
    return None


def _check_code_action(params: object) -> str | None:
    if not isinstance(params, dict):
        return "params must be an object"
    doc = params.get("textDocument")
    if not isinstance(doc, dict) or not isinstance(doc.get("uri"), str):
        return "textDocument.uri must be a string"
    problem = _check_range(params.get("range"), "range")
    if problem:
        return problem
    context = params.get("context")
    if not isinstance(context, dict):
        return "context must be an object"
    diagnostics = context.get("diagnostics")
    if not isinstance(diagnostics, list):
        return "context.diagnostics must be a list"
    for i, d in enumerate(diagnostics):
        if not isinstance(d, dict) or not isinstance(d.get("message"), str):
            return f"context.diagnostics[{i}] must be a diagnostic with a message"
        problem = _check_range(d.get("range"), f"context.diagnostics[{i}].range")
        if problem:
            return problem
    only = context.get("only")
    if only is not None and not (isinstance(only, list) and all(isinstance(k, str) for k in only)):
        return "context.only must be a list of strings"
    return None


def _check_execute_command(params: object) -> str | None:
    if not isinstance(params, dict) or not isinstance(params.get("command"), str):
        return "command must be a string"
    arguments = params.get("arguments")
    if arguments is not None and not isinstance(arguments, list):
        return "arguments must be a list"
    return None


def _check_text_document(params: object) -> str | None:
    if not isinstance(params, dict):
        return "params must be an object"
    doc = params.get("textDocument")
    if not isinstance(doc, dict) or not isinstance(doc.get("uri"), str):
        return "textDocument.uri must be a string"
    return None


#: Strict shape checks of the raw params of the requests Baton serves.
RAW_CHECKS = {
    types.TEXT_DOCUMENT_CODE_ACTION: _check_code_action,
    types.WORKSPACE_EXECUTE_COMMAND: _check_execute_command,
    types.TEXT_DOCUMENT_CODE_LENS: _check_text_document,
}


def check_request(method: str, params: object) -> str | None:
    """What is wrong with the raw params of a request, or None."""
    check = RAW_CHECKS.get(method)
    return None if check is None else check(params)


#: The LSP error code of a request the task's state does not allow, or an unknown task.
REQUEST_FAILED = -32803


def failed(exc: Exception) -> JsonRpcException:
    """``RequestFailed`` saying what ``exc`` says."""
    # A bare KeyError's str() quotes its key; the store's own errors say what they mean.
    bare_key = type(exc).__str__ is KeyError.__str__ and exc.args
    return JsonRpcException(str(exc.args[0]) if bare_key else str(exc), code=REQUEST_FAILED)


def moved(task_id: str, state: TaskState) -> dict[str, Any]:
    """The answer to a move of a task: its state now, and what can be done next."""
    return {"taskId": task_id, "state": str(state), "next": list(NEXT_MOVES[state])}
