"""The Baton language server: a pygls server on stdio with the broker inside.

The server runs the event loop (:meth:`BatonServer.start_io`: the client's messages are read
on the loop itself, see :mod:`.stdio`; the protocol is :mod:`.protocol`); the broker
(:class:`Supervisor`) starts on ``initialized`` and closes on ``shutdown``. Handlers never
block the loop: the broker does its SQLite and git work on worker threads, and so does
everything here that reads files or compares texts.

This module holds the shared state and the plumbing and imports no feature: the features
(notify, progress, transcripts, permissions, foresee, ide) live in their own modules, take
this server and the callables they need, and are given to it with
:meth:`BatonServer.add_feature`; :func:`baton.surfaces.lsp.create_language_server` puts
them together (as esbonio does).
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, BinaryIO, TypeVar
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

import baton.surfaces.lsp.placement as placement
from baton import __version__
from baton.core.events import Event
from baton.core.lifecycle import TaskState
from baton.core.task import Task
from baton.runtime import Supervisor, TaskError
from baton.store.paths import state_home
from baton.surfaces.lsp.asking import Questions
from baton.surfaces.lsp.documents import OpenDocuments, relative_to, uri_to_path
from baton.surfaces.lsp.editor_settings import EditorSettings
from baton.surfaces.lsp.protocol import BatonProtocol
from baton.surfaces.lsp.stdio import MessageReader, RequestsFirstLoop, serve_stdin
from baton.surfaces.notices import DesktopNotices, start_notices
from baton.surfaces.ws.endpoint import Endpoint, start_endpoint
from baton.surfaces.ws.serve import broker_supervisor

log = logging.getLogger(__name__)

F = TypeVar("F", bound="Feature")


class Feature:
    """A part of the language server that follows the broker's life (esbonio's
    ``LanguageFeature``). The server calls each hook on every feature it was given, in the
    order they were given; each does nothing unless a feature says otherwise."""

    async def started(self, supervisor: Supervisor) -> None:
        """The broker runs and requests are served."""

    def on_event(self, event: Event) -> None:
        """A committed broker event, on the loop: must stay cheap."""

    async def stop(self) -> None:
        """The broker is about to close."""


class BatonServer(LanguageServer):
    """The server and the state its features share."""

    def __init__(self) -> None:
        super().__init__(
            "baton",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=BatonProtocol,
        )
        self.settings = EditorSettings()
        self.supervisor: Supervisor | None = None
        self.ready = asyncio.Event()
        self.start_error: str | None = None
        self.docs = OpenDocuments()
        self.roots: set[str] = set()
        self.client_name: str | None = None  # clientInfo.name, e.g. "Neovim"
        self.endpoint: Endpoint | None = None  # the broker's websocket (other agents, CLI)
        self.notices: DesktopNotices | None = None  # desktop notifications ([notify])
        self.reviews: dict[str, placement.TaskDiff] = {}
        self.questions = Questions()  # tasks asking a question (reply code action)
        # Review findings shown as diagnostics: task id → uri → diagnostics.
        self.findings: dict[str, dict[str, list[types.Diagnostic]]] = {}
        self._features: dict[type[Feature], Feature] = {}
        self._background: set[asyncio.Task[Any]] = set()

    # -- stdio ----------------------------------------------------------------------------

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve on stdin/stdout until the client closes stdin or says ``exit``: messages
        are read on the event loop, a whole one per wake-up (:mod:`.stdio`); pygls' own
        reader (a thread per line) where the loop cannot watch stdin."""
        source = stdin or sys.stdin.buffer
        try:
            fd = source.fileno()
            watchable = not stat.S_ISREG(os.fstat(fd).st_mode)
        except (AttributeError, OSError, ValueError):
            watchable = False
        if not watchable:
            super().start_io(stdin, stdout)
            return
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        reader = MessageReader(
            self.protocol.handle_message,
            self.protocol.structure_message,
            self.report_server_error,
            JsonRpcException,
        )
        try:
            with asyncio.Runner(loop_factory=RequestsFirstLoop) as runner:
                runner.run(serve_stdin(fd, reader, self._stop_event.is_set))
        except BrokenPipeError:
            log.error("the connection to the client is lost; stopping")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()  # type: ignore[no-untyped-call]  # pygls leaves it untyped

    # -- features -------------------------------------------------------------------------

    def add_feature(self, feature: Feature) -> None:
        """Give the server a feature: its hooks are called from now on (one per class)."""
        kind = type(feature)
        if kind in self._features:
            raise ValueError(f"the server already has a {kind.__name__}")
        self._features[kind] = feature

    def get_feature(self, kind: type[F]) -> F:
        """The feature of class ``kind`` (or of a subclass of it) the server was given."""
        for feature in self._features.values():
            if isinstance(feature, kind):
                return feature
        raise LookupError(f"the server has no {kind.__name__}")

    def _on_event(self, event: Event) -> None:
        for feature in self._features.values():
            feature.on_event(event)

    # -- plumbing -------------------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Run ``coro`` in the background; failures are logged, never lost silently."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._background.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._background.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("%s failed", name, exc_info=t.exception())

        task.add_done_callback(done)
        return task

    async def broker(self) -> Supervisor:
        """The running broker (waits for it while the server is starting)."""
        if self.supervisor is None or not self.ready.is_set():
            try:
                await asyncio.wait_for(self.ready.wait(), 30)
            except TimeoutError:
                pass
        if self.supervisor is None:
            raise JsonRpcException(
                f"the Baton broker is not running: {self.start_error or 'not started yet'}",
                code=-32002,
            )
        return self.supervisor

    async def start_broker(self) -> None:
        """Start the broker and its websocket endpoint, then each feature (``started``)."""
        try:
            home = await asyncio.to_thread(state_home)
            # opens (migrates) the database; the default worker comes from the settings
            sup = await asyncio.to_thread(broker_supervisor, home)
            await sup.start()
        except Exception as exc:
            self.start_error = str(exc)
            log.error("could not start the broker: %s", exc)
            self.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Error, message=f"Baton: could not start: {exc}"
                )
            )
            self.ready.set()
            return
        self.supervisor = sup
        try:
            self.endpoint = await start_endpoint(sup, sorted(self.roots))
        except Exception as exc:  # the editor works without it; agents and the CLI do not
            log.error("could not open the websocket endpoint: %s", exc)
        sup.listen(self._on_event)
        self.notices = start_notices(sup)
        self.ready.set()
        for feature in list(self._features.values()):
            await feature.started(sup)

    async def stop_broker(self) -> None:
        """Stop each feature (``stop``), then the endpoint and the broker."""
        for feature in list(self._features.values()):
            await feature.stop()
        sup, self.supervisor = self.supervisor, None
        endpoint, self.endpoint = self.endpoint, None
        if endpoint is not None:
            await endpoint.close()
        notices, self.notices = self.notices, None
        if notices is not None:
            await notices.close()
        if sup is not None:
            sup.unlisten(self._on_event)
            await sup.close()

    async def cancel(self, task_id: str) -> Task:
        """Cancel a task, riding out the moment between "running" and its process existing.

        (The broker marks a task running just before it starts the agent; a cancel in that
        gap finds nothing to kill, so it is tried again for up to two seconds.)
        """
        sup = await self.broker()
        for _ in range(40):
            try:
                return await sup.cancel(task_id)
            except TaskError:
                task = await sup.get(task_id)
                if task.state != TaskState.RUNNING:
                    raise
            await asyncio.sleep(0.05)
        return await sup.cancel(task_id)

    async def cancel_or_warn(self, task_id: str) -> None:
        """:meth:`cancel`, saying in a message when it fails."""
        try:
            await self.cancel(task_id)
        except Exception as exc:
            self.warn(f"could not cancel {task_id}: {exc}")

    def warn(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=f"Baton: {message}"))

    def refresh_code_lenses(self) -> None:
        ws = self.client_capabilities.workspace
        if ws is None or ws.code_lens is None or not ws.code_lens.refresh_support:
            return

        async def refresh() -> None:
            try:
                await asyncio.wait_for(self.workspace_code_lens_refresh_async(None), 10)
            except Exception as exc:
                log.info("codeLens refresh failed: %s", exc)

        self.spawn(refresh(), "codeLens refresh")

    # -- documents and roots --------------------------------------------------------------

    @property
    def encoding(self) -> str:
        enc = self.workspace.position_encoding
        return str(enc.value if isinstance(enc, types.PositionEncodingKind) else enc or "utf-16")

    def open_texts(self) -> dict[str, tuple[str, int | None]]:
        """uri → (text, version) of every open document (captured now, on the loop)."""
        return {
            uri: (doc.source, doc.version) for uri, doc in self.workspace.text_documents.items()
        }

    def open_document(self, uri: str) -> tuple[str, int | None] | None:
        doc = self.workspace.text_documents.get(unquote(uri))
        return None if doc is None else (doc.source, doc.version)

    def folders(self) -> list[Path]:
        out = []
        for folder in self.workspace.folders.values():
            path = uri_to_path(folder.uri)
            if path is not None:
                out.append(path)
        root = self.workspace.root_path
        if root and not out:
            out.append(Path(root))
        return out

    def root_for(self, path: Path) -> Path:
        """The workspace folder holding ``path`` (the innermost), else its own folder."""
        best: Path | None = None
        for folder in self.folders():
            if relative_to(path, folder) is not None and (
                best is None or len(folder.parts) > len(best.parts)
            ):
                best = folder
        return best if best is not None else path.parent

    def overlays(self, root: Path) -> dict[str, str]:
        """Unsaved text of open documents under ``root`` (root-relative paths)."""
        out: dict[str, str] = {}
        for uri in self.docs.dirty:
            doc = self.workspace.text_documents.get(uri)
            path = uri_to_path(uri)
            if doc is None or path is None:
                continue
            rel = relative_to(path, root)
            if rel is not None and rel != "." and ".git" not in rel.split("/"):
                out[rel] = doc.source
        return out

    async def diff_payload(self, td: placement.TaskDiff) -> dict[str, Any]:
        """The ``baton/diff`` payload of a task, placed in the current documents."""
        opened = self.open_texts()
        encoding = self.encoding

        def build() -> dict[str, Any]:
            disk = placement.current_texts(td, opened)
            return placement.payload(td, opened, disk, encoding)

        return await asyncio.to_thread(build)

    async def publish_findings(self, td: placement.TaskDiff) -> None:
        """Show the independent review's findings while the task is in review."""
        if td.task.state != TaskState.REVIEW:
            self.clear_findings(td.task.id)
            return
        opened = self.open_texts()
        encoding = self.encoding

        def build() -> dict[str, list[types.Diagnostic]]:
            disk = placement.current_texts(td, opened)
            return placement.findings_by_uri(td, opened, disk, encoding)

        self._show_findings(td.task.id, await asyncio.to_thread(build))

    def clear_findings(self, task_id: str) -> None:
        """The task left review: its findings go away."""
        if task_id in self.findings:
            self._show_findings(task_id, {})

    def _show_findings(self, task_id: str, now: dict[str, list[types.Diagnostic]]) -> None:
        before = self.findings.pop(task_id, {})
        if now:
            self.findings[task_id] = now
        for uri in before.keys() | now.keys():
            merged = [d for by_uri in self.findings.values() for d in by_uri.get(uri, [])]
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=merged)
            )
