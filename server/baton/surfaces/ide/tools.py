"""The MCP subset Claude Code speaks to its IDE: tool names, schemas, argument readers and the
exact result texts the CLI checks. Pure: no I/O.

Results are MCP ``tools/call`` results, ``{"content": [{"type": "text", "text": ...}, ...]}``.
The CLI reads ``openDiff`` by its first text item: ``FILE_SAVED`` (then the final contents as
the second item), ``DIFF_REJECTED`` (then the tab name), or ``TAB_CLOSED`` (taken as "accepted
as proposed"; we never send it). Most other tools answer one text item holding a JSON string.
"""

from __future__ import annotations

import json
from typing import Any

from baton import __version__
from baton.surfaces.ide.host import DiffDecision, file_uri
from baton.surfaces.ide.rpc import INVALID_PARAMS, RpcError

FILE_SAVED = "FILE_SAVED"
DIFF_REJECTED = "DIFF_REJECTED"
TAB_CLOSED = "TAB_CLOSED"

#: MCP protocol versions this server answers with (newest first). The CLI 2.1.197 asks for
#: 2025-11-25 and accepts any of its own list (2025-11-25 … 2024-10-07); we use no feature
#: that differs between these versions.
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

#: Tools the CLI calls. It offers only getDiagnostics and executeCode of them to the model
#: (as ``mcp__ide__*``), and only those listed by ``tools/list``; we list getDiagnostics.
TOOL_NAMES = frozenset(
    {
        "openDiff",
        "close_tab",
        "closeAllDiffTabs",
        "getDiagnostics",
        "getCurrentSelection",
        "getLatestSelection",
        "getOpenEditors",
        "getWorkspaceFolders",
        "checkDocumentDirty",
        "saveDocument",
        "openFile",
        "executeCode",
    }
)

LISTED_TOOLS: list[dict[str, Any]] = [
    {
        "name": "getDiagnostics",
        "description": (
            "Get language diagnostics (errors, warnings) from the editor. Returns a JSON list of "
            "{uri, diagnostics: [{message, severity, range, source}]}."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "uri": {
                    "type": "string",
                    "description": "Optional file:// URI; without it, every file's diagnostics.",
                }
            },
            "additionalProperties": False,
        },
    }
]


def negotiate(requested: object) -> str:
    """The protocol version to answer ``initialize`` with: the client's when we support it,
    else our newest (the client then decides whether it can go on)."""
    if isinstance(requested, str) and requested in SUPPORTED_VERSIONS:
        return requested
    return SUPPORTED_VERSIONS[0]


def initialize_result(requested: object, ide_name: str) -> dict[str, Any]:
    return {
        "protocolVersion": negotiate(requested),
        "capabilities": {
            "tools": {"listChanged": False},
            "prompts": {"listChanged": False},
        },
        "serverInfo": {"name": f"{ide_name} (Baton IDE server)", "version": __version__},
    }


def text_result(*texts: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": t} for t in texts]}


def json_result(value: Any) -> dict[str, Any]:
    return text_result(json.dumps(value))


def tool_error(message: str) -> dict[str, Any]:
    """A tool that ran and failed (MCP ``isError``), as opposed to a protocol error."""
    return {"content": [{"type": "text", "text": message}], "isError": True}


def diff_result(decision: DiffDecision, tab_name: str) -> dict[str, Any]:
    if decision.saved is not None:
        return text_result(FILE_SAVED, decision.saved)
    return text_result(DIFF_REJECTED, tab_name)


def rejected(tab_name: str) -> dict[str, Any]:
    return text_result(DIFF_REJECTED, tab_name)


def closed_tabs(count: int) -> dict[str, Any]:
    return text_result(f"CLOSED_{count}_DIFF_TABS")


def not_open(file_path: str) -> dict[str, Any]:
    return json_result({"success": False, "message": f"Document not open: {file_path}"})


def folders_result(folders: list[str]) -> dict[str, Any]:
    items = [
        {"name": f.rstrip("/").rsplit("/", 1)[-1] or f, "uri": file_uri(f), "path": f}
        for f in folders
    ]
    return json_result(
        {"success": True, "folders": items, "rootPath": folders[0] if folders else ""}
    )


# --------------------------------------------------------------------------- argument readers


def _bad(name: str, what: str) -> RpcError:
    return RpcError(INVALID_PARAMS, f"{name}: {what}")


def arguments(params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``tools/call`` params: the tool name and its arguments (an object, possibly empty)."""
    name = params.get("name")
    if not isinstance(name, str) or not name:
        raise _bad("name", "a tool name (string) is required")
    args = params.get("arguments")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise _bad("arguments", "must be an object")
    return name, args


def string(args: dict[str, Any], name: str, *, required: bool = True) -> str:
    value = args.get(name)
    if value is None:
        if required:
            raise _bad(name, "required")
        return ""
    if not isinstance(value, str):
        raise _bad(name, "must be a string")
    return value


def optional_string(args: dict[str, Any], name: str) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _bad(name, "must be a string")
    return value or None


def boolean(args: dict[str, Any], name: str, default: bool) -> bool:
    value = args.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _bad(name, "must be true or false")
    return value


def path(args: dict[str, Any], name: str) -> str:
    """A file path argument: a non-empty string without NUL characters."""
    value = string(args, name)
    if not value or "\x00" in value:
        raise _bad(name, "must be a non-empty path")
    return value
