"""The editor as Claude Code's IDE, through Baton (see :mod:`baton.surfaces.ide`).

The language server runs an IDE server next to its broker (setting ``claudeIde``, on by
default). A Claude Code session in a terminal connects to it (``/ide`` in Claude Code, or
``CLAUDE_CODE_SSE_PORT``); when it proposes to write or edit a file, the proposal becomes a
Baton task in review (:meth:`Supervisor.propose`): the editor shows it as an inline diff,
the user decides it hunk by hunk with the usual commands, and the answer goes back to
Claude Code, which writes the file; the editor reloads it. Answering in the terminal first
withdraws the task.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from lsprotocol import types

from baton.runtime import Supervisor, TaskError, read_current
from baton.surfaces.ide import (
    ClosedBy,
    DiffDecision,
    DiffRequest,
    DiffUnavailable,
    IdeHost,
    IdeServer,
    OpenEditor,
    OpenFileRequest,
    start_ide_server,
)
from baton.surfaces.lsp.documents import path_to_uri, uri_to_path
from baton.surfaces.lsp.server import BatonServer, Feature

log = logging.getLogger(__name__)

SOURCE = "claude-code"
_WHY_CLOSED: dict[ClosedBy, str] = {
    "cli": "answered in the Claude Code terminal",
    "replaced": "Claude Code replaced it with a newer proposal",
    "disconnect": "Claude Code disconnected",
    "shutdown": "the editor's Baton stopped",
}


class EditorIdeHost(IdeHost):
    """Claude Code's diffs as Baton proposals in this editor."""

    def __init__(self, ls: BatonServer) -> None:
        self.ls = ls
        self.tabs: dict[str, str] = {}  # Claude Code's tab name → task id

    def root_for(self, file: Path) -> Path | None:
        """The innermost workspace folder holding ``file``."""
        roots = sorted((Path(r) for r in self.ls.roots), key=lambda r: len(r.parts), reverse=True)
        return next((r for r in roots if r == file or r in file.parents), None)

    async def open_diff(self, request: DiffRequest) -> DiffDecision:
        file = Path(request.new_file_path).resolve()
        root = self.root_for(file)
        if root is None:
            raise DiffUnavailable(f"{file} is outside the folders open in the editor")
        opened = self.ls.open_document(path_to_uri(file))
        base = request.old_contents
        if opened is not None and base is not None and opened[0] != base:
            raise DiffUnavailable(
                f"{file.name} has unsaved edits in the editor: save or discard them first"
            )
        sup = await self.ls.broker()
        rel = file.relative_to(root).as_posix()
        verb = "create" if request.is_new_file else "edit"
        try:
            task, decided = await sup.propose(
                file,
                request.old_contents,
                request.new_file_contents,
                root=root,
                title=f"Claude Code: {verb} {rel}",
                source=SOURCE,
                meta={"tab": request.tab_name, "clientPid": request.client_pid},
            )
        except (TaskError, ValueError) as exc:
            raise DiffUnavailable(str(exc)) from exc
        self.tabs[request.tab_name] = task.id
        self.ls.spawn(self._show(file), f"show {rel}")
        return DiffDecision(await decided)

    def closed(self, tab_name: str, by: ClosedBy) -> None:
        task_id = self.tabs.pop(tab_name, None)
        sup = self.ls.supervisor
        if task_id is not None and sup is not None:
            self.ls.spawn(sup.withdraw(task_id, _WHY_CLOSED[by]), f"withdraw {task_id}")

    async def workspace_folders(self) -> list[str] | None:
        return sorted(self.ls.roots)

    async def document_dirty(self, file_path: str) -> bool | None:
        opened = self.ls.open_document(path_to_uri(Path(file_path)))
        if opened is None:
            return None
        try:
            on_disk = await asyncio.to_thread(read_current, Path(file_path))  # not on the loop
        except OSError:
            return True
        return on_disk is None or opened[0] != on_disk

    async def open_editors(self) -> list[OpenEditor]:
        out = []
        for uri, doc in self.ls.workspace.text_documents.items():
            path = uri_to_path(uri)
            if path is not None:
                dirty = await self.document_dirty(str(path))
                language = doc.language_id or ""
                out.append(OpenEditor(str(path), is_dirty=bool(dirty), language_id=language))
        return out

    async def open_file(self, request: OpenFileRequest) -> bool:
        return await self._show(Path(request.file_path), focus=request.make_frontmost)

    async def _show(self, file: Path, *, focus: bool = False) -> bool:
        """Bring the file into view (``window/showDocument``) when the client can."""
        window = self.ls.client_capabilities.window
        if window is None or window.show_document is None or not window.show_document.support:
            return False
        try:
            answer = await self.ls.window_show_document_async(
                types.ShowDocumentParams(uri=path_to_uri(file), take_focus=focus)
            )
        except Exception as exc:
            log.info("showDocument %s failed: %s", file, exc)
            return False
        return bool(answer.success)


class ClaudeIde(Feature):
    """The IDE server of this editor, running while the ``claudeIde`` setting asks for it."""

    def __init__(self, ls: BatonServer) -> None:
        self.ls = ls
        self.server: IdeServer | None = None
        self._lock = asyncio.Lock()  # one start or stop at a time

    @property
    def running(self) -> bool:
        return self.server is not None

    async def started(self, supervisor: Supervisor) -> None:
        await self.sync()

    async def sync(self) -> None:
        """Run the IDE server when the setting asks for it, and only then."""
        async with self._lock:
            if self.ls.settings.claude_ide and self.server is None:
                if self.ls.supervisor is not None:
                    self.server = await start(self.ls)
            elif not self.ls.settings.claude_ide and self.server is not None:
                server, self.server = self.server, None
                await server.close()

    def set_workspace_folders(self, roots: list[str]) -> None:
        if self.server is not None:
            self.server.set_workspace_folders(roots)

    async def stop(self) -> None:
        async with self._lock:
            if self.server is not None:
                server, self.server = self.server, None
                await server.close()


async def start(ls: BatonServer) -> IdeServer | None:
    """Start the IDE server for this editor; None (logged) when it cannot."""
    client = ls.client_name or "editor"
    try:
        return await start_ide_server(
            EditorIdeHost(ls), sorted(ls.roots), ide_name=f"Baton ({client})"
        )
    except Exception as exc:
        log.error("could not start the Claude Code IDE server: %s", exc)
        return None
