"""The tools of Claude Code's IDE protocol that the editor answers (diagnostics, selections,
open editors, folders, dirty and save, open a file): each asks the :class:`IdeHost` (with
the server's time limit) and shapes its answer as Claude Code's own IDE extensions do. The
diff tools, which Baton answers itself, are in :mod:`baton.surfaces.ide.server`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import baton.surfaces.ide.tools as t
from baton.surfaces.ide.host import IdeHost, OpenFileRequest

#: The tools the editor answers (:func:`answer_tool`); the server itself answers the diff tools.
DIFF_TOOLS = frozenset({"openDiff", "close_tab", "closeAllDiffTabs"})
EDITOR_TOOLS = t.TOOL_NAMES - DIFF_TOOLS


async def answer_tool(
    host: IdeHost,
    name: str,
    args: dict[str, Any],
    provide: Callable[[Awaitable[Any]], Awaitable[Any]],
    workspace_folders: Sequence[str],
) -> Any:
    """The result of the editor tool ``name`` (one of :data:`EDITOR_TOOLS`); ``provide``
    awaits the host's answer within the server's time limit."""
    if name == "getDiagnostics":
        files = await provide(host.diagnostics(t.optional_string(args, "uri")))
        return t.json_result([f.to_json() for f in files])
    if name in ("getCurrentSelection", "getLatestSelection"):
        current = name == "getCurrentSelection"
        sel = await provide(host.current_selection() if current else host.latest_selection())
        if sel is not None:
            return t.json_result(sel.to_json())
        missing = "No active editor found" if current else "No selection available"
        return t.json_result({"success": False, "message": missing})
    if name == "getOpenEditors":
        editors = await provide(host.open_editors())
        return t.json_result({"tabs": [e.to_json() for e in editors]})
    if name == "getWorkspaceFolders":
        folders = await provide(host.workspace_folders())
        return t.folders_result(folders if folders is not None else list(workspace_folders))
    if name == "checkDocumentDirty":
        file_path = t.path(args, "filePath")
        dirty = await provide(host.document_dirty(file_path))
        if dirty is None:
            return t.not_open(file_path)
        return t.json_result(
            {"success": True, "filePath": file_path, "isDirty": dirty, "isUntitled": False}
        )
    if name == "saveDocument":
        file_path = t.path(args, "filePath")
        saved = await provide(host.save_document(file_path))
        if saved is None:
            return t.not_open(file_path)
        message = "Document saved successfully" if saved else "Document could not be saved"
        return t.json_result(
            {"success": saved, "filePath": file_path, "saved": saved, "message": message}
        )
    if name == "openFile":
        request = OpenFileRequest(
            file_path=t.path(args, "filePath"),
            preview=t.boolean(args, "preview", False),
            start_text=t.string(args, "startText", required=False),
            end_text=t.string(args, "endText", required=False),
            select_to_end_of_line=t.boolean(args, "selectToEndOfLine", False),
            make_frontmost=t.boolean(args, "makeFrontmost", True),
        )
        opened = await provide(host.open_file(request))
        if request.make_frontmost:
            if opened:
                return t.text_result(f"Opened file: {request.file_path}")
            return t.tool_error(f"Could not open file: {request.file_path}")
        return t.json_result(
            {"success": opened, "filePath": request.file_path}
            if opened
            else {"success": False, "message": f"Could not open file: {request.file_path}"}
        )
    if name == "executeCode":
        return t.tool_error("executeCode is not supported: Baton's IDE server runs no code.")
    raise ValueError(f"not an editor tool: {name}")
