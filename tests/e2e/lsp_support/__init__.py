"""Driving ``baton lsp`` as a real subprocess with pytest-lsp's client.

:func:`start` launches the server with its own BATON_HOME, initializes it with the recorded
capabilities of an editor (Neovim or VS Code) and a workspace folder, and returns a
:class:`Session` whose :class:`Recorder` keeps every Baton notification and server request
(``workspace/applyEdit`` is answered as an editor would: the edits are applied to the
client's copy of the document and a ``didChange`` follows).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import make_test_lsp_client

from baton.surfaces.lsp.documents import apply_text_edits, path_to_uri

#: The editors whose recorded capabilities every end-to-end test runs with.
EDITORS = ("neovim@v0.11.0", "visual-studio-code")


def server_command() -> list[str]:
    entry = Path(sys.executable).parent / "baton"
    if entry.exists():
        return [str(entry), "lsp"]
    return [sys.executable, "-c", "import sys; from baton.cli import main; sys.exit(main(['lsp']))"]


@dataclass
class Document:
    uri: str
    text: str
    version: int


@dataclass
class Recorder:
    """What the server sent besides responses."""

    tasks: list[dict[str, Any]] = field(default_factory=list)
    status: list[dict[str, Any]] = field(default_factory=list)
    diffs: list[dict[str, Any]] = field(default_factory=list)
    transcripts: list[dict[str, Any]] = field(default_factory=list)
    plans: list[dict[str, Any]] = field(default_factory=list)
    edits: list[types.ApplyWorkspaceEditParams] = field(default_factory=list)
    questions: list[types.ShowMessageRequestParams] = field(default_factory=list)
    lens_refreshes: int = 0
    apply_edits: bool = True  # answer applyEdit with applied=true (and apply it)
    pick: int | None = 0  # the action chosen in showMessageRequest (None: dismissed)

    def task_states(self, task_id: str) -> list[str]:
        return [t["state"] for n in self.tasks for t in n["tasks"] if t["id"] == task_id]

    def diffs_of(self, task_id: str) -> list[dict[str, Any]]:
        return [d for d in self.diffs if d["taskId"] == task_id]

    def counts(self) -> dict[str, Any]:
        """The task counts of the last ``baton/status`` (its ``sandbox`` left out)."""
        return counts_of(self.status[-1]) if self.status else {}


def counts_of(status: dict[str, Any]) -> dict[str, Any]:
    """A ``baton/status`` payload's task counts, without how agents run (``sandbox``)."""
    return {k: v for k, v in status.items() if k != "sandbox"}


@dataclass
class Session:
    client: LanguageClient
    editor: str
    repo: Path
    home: Path
    rec: Recorder
    docs: dict[str, Document] = field(default_factory=dict)

    def uri(self, rel: str) -> str:
        return path_to_uri(self.repo / rel)

    def open(self, rel: str, text: str | None = None) -> Document:
        uri = self.uri(rel)
        if text is None:
            text = (self.repo / rel).read_text()
        doc = Document(uri, text, 1)
        self.docs[uri] = doc
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
            )
        )
        return doc

    def change(self, doc: Document, text: str) -> None:
        """The user types: the whole new text as one change."""
        doc.text, doc.version = text, doc.version + 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=doc.uri, version=doc.version
                ),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    async def command(self, name: str, *args: Any) -> Any:
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=list(args))
        )

    async def status(self) -> dict[str, Any]:
        result: dict[str, Any] = await self.command("baton.status")
        return result

    async def state(self, task_id: str) -> str:
        result = await self.command("baton.inspect", {"taskId": task_id, "events": 0})
        return str(result["task"]["state"])

    async def settle(self, task_id: str, *states: str, timeout: float = 20.0) -> str:
        wanted = set(states) or {"review", "needs_input", "answered", "failed", "cancelled"}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = await self.state(task_id)
            if state in wanted:
                return state
            await asyncio.sleep(0.03)
        raise AssertionError(f"task {task_id} still {await self.state(task_id)}")

    def progress_of(self, task_id: str) -> list[Any]:
        out: list[Any] = []
        for token, values in self.client.progress_reports.items():
            if str(token).startswith(f"baton/{task_id}/"):
                out += values
        return out


async def raw_request(client: LanguageClient, method: str, params: Any) -> Any:
    """Send a request with ``params`` exactly as given (pygls would type-check them first).

    Returns the raw result; an error response raises its :class:`JsonRpcException`.
    """
    protocol = client.protocol
    msg_id = str(uuid.uuid4())
    future: Future[Any] = Future()
    protocol._request_futures[msg_id] = future
    protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return await asyncio.wrap_future(future)


async def wait_for(pred: Callable[[], Any], timeout: float = 15.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what or pred}")


def _register(session: Session) -> None:
    client, rec = session.client, session.rec

    @client.feature("baton/tasks")
    def on_tasks(params: Any) -> None:
        rec.tasks.append(_plain(params))

    @client.feature("baton/status")
    def on_status(params: Any) -> None:
        rec.status.append(_plain(params))

    @client.feature("baton/diff")
    def on_diff(params: Any) -> None:
        rec.diffs.append(_plain(params))

    @client.feature("baton/transcript")
    def on_transcript(params: Any) -> None:
        rec.transcripts.append(_plain(params))

    @client.feature("baton/plan")
    def on_plan(params: Any) -> None:
        rec.plans.append(_plain(params))

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def on_refresh(params: Any) -> None:
        rec.lens_refreshes += 1

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_question(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        rec.questions.append(params)
        if rec.pick is None or not params.actions:
            return None
        return params.actions[rec.pick]

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def on_apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        rec.edits.append(params)
        if not rec.apply_edits:
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason="user said no")
        edit = params.edit
        per_doc: list[tuple[str, int | None, list[types.TextEdit]]] = []
        for change in edit.document_changes or []:
            assert isinstance(change, types.TextDocumentEdit)
            edits = [e for e in change.edits if isinstance(e, types.TextEdit)]
            per_doc.append((change.text_document.uri, change.text_document.version, edits))
        for uri, edits in (edit.changes or {}).items():
            per_doc.append((uri, None, list(edits)))
        for uri, version, _ in per_doc:
            doc = session.docs[uri]
            if version is not None and version != doc.version:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="version")
        for uri, _, edits in per_doc:
            doc = session.docs[uri]
            asyncio.get_running_loop().call_soon(
                session.change, doc, apply_text_edits(doc.text, edits)
            )
        return types.ApplyWorkspaceEditResult(applied=True)


def _plain(value: Any) -> Any:
    """Notification params as plain JSON (pygls may hand over attrs objects)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if hasattr(value, "_asdict"):  # pygls hands unknown params over as named tuples
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "__attrs_attrs__") or hasattr(value, "__dict__"):
        return {k: _plain(v) for k, v in vars(value).items()}
    return value


def _fix_code_action_union(client: LanguageClient) -> None:
    """lsprotocol reads any object with a ``command`` key as a Command, even a CodeAction
    whose ``command`` is an object; read those as the CodeActions they are."""
    converter = client.protocol._converter

    def hook(obj: Any, _: type) -> types.Command | types.CodeAction:
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, types.Command)
        return converter.structure(obj, types.CodeAction)

    converter.register_structure_hook(Union[types.Command, types.CodeAction], hook)  # noqa: UP007


async def start(
    editor: str,
    repo: Path,
    home: Path,
    *,
    options: dict[str, Any] | None = None,
) -> Session:
    client = make_test_lsp_client()
    _fix_code_action_union(client)
    session = Session(client, editor, repo, home, Recorder())
    _register(session)
    env = dict(os.environ)
    env["BATON_HOME"] = str(home)
    await client.start_io(*server_command(), env=env, cwd=str(repo))
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(editor),
            root_uri=path_to_uri(repo),
            workspace_folders=[types.WorkspaceFolder(uri=path_to_uri(repo), name="repo")],
            initialization_options=options or {},
        )
    )
    return session


async def stop(session: Session) -> None:
    await asyncio.wait_for(session.client.shutdown_session(), 20)
    await session.client.stop()
