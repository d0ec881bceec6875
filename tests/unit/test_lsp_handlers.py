"""The language server's handlers, called as pygls calls them (the server first) with a
stand-in server: document sync, settings, folders, code actions, hover, progress cancel,
a command's errors; and the server's features (hooks in order, one per class). No
subprocess, no client: tests/e2e/test_lsp_*.py run the real thing."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, cast

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from baton.core.events import Event, EventType
from baton.core.lifecycle import TaskState
from baton.core.task import Target, Task
from baton.store import UnknownTask
from baton.surfaces.lsp import commands, create_language_server, features
from baton.surfaces.lsp.asking import REPLY_KIND, Questions
from baton.surfaces.lsp.documents import OpenDocuments, path_to_uri, units, uri_to_path
from baton.surfaces.lsp.editor_settings import EditorSettings
from baton.surfaces.lsp.foresee import Foresee
from baton.surfaces.lsp.ide import ClaudeIde
from baton.surfaces.lsp.notify import Notifier
from baton.surfaces.lsp.payloads import Args
from baton.surfaces.lsp.permissions import PermissionPrompts
from baton.surfaces.lsp.progress import Progress
from baton.surfaces.lsp.server import BatonServer, Feature
from baton.surfaces.lsp.transcripts import Transcripts


class Recorder:
    """A feature stand-in: records each call made on it."""

    def __init__(self, **attrs: Any) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.__dict__.update(attrs)

    def __getattr__(self, name: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> None:
            self.calls.append((name, args))

        return record


class Endpoint:
    def __init__(self) -> None:
        self.roots: list[str] = []

    def set_roots(self, roots: list[str]) -> None:
        self.roots = roots


class FakeServer:
    """What the handlers use of :class:`BatonServer`."""

    def __init__(self, folders: list[Path], texts: dict[str, str] | None = None) -> None:
        self.docs = OpenDocuments()
        self.settings = EditorSettings()
        self.roots: set[str] = set()
        self.reviews: dict[str, Any] = {}
        self.questions = Questions()
        self.supervisor: object | None = None
        self.endpoint: Endpoint | None = None
        self.client_name: str | None = None
        self.client_capabilities = types.ClientCapabilities()
        self.encoding = "utf-16"
        self.warnings: list[str] = []
        self.spawned: list[str] = []
        self._folders = folders
        self._texts = texts or {}
        self.parts: dict[type, Any] = {}

    def folders(self) -> list[Path]:
        return self._folders

    def open_document(self, uri: str) -> tuple[str, int | None] | None:
        text = self._texts.get(uri)
        return None if text is None else (text, 1)

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        coro.close()  # not run: the test checks what was started
        self.spawned.append(name)

    def get_feature(self, kind: type) -> Any:
        return self.parts[kind]


def server(fake: FakeServer) -> BatonServer:
    return cast(BatonServer, fake)


def doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


def test_document_sync_tracks_unsaved_documents_and_checks_hunks_on_change(
    tmp_path: Path,
) -> None:
    fake = FakeServer([tmp_path])
    followed: dict[str, object] = {}  # tasks whose accepted hunks an undo would reopen
    foresee = fake.parts[Foresee] = Recorder(undone=Recorder(tasks=followed))
    uri = path_to_uri(tmp_path / "a.py")
    item = types.TextDocumentItem(uri=uri, language_id="python", version=1, text="x\n")
    features.did_open(server(fake), types.DidOpenTextDocumentParams(text_document=item))
    change = types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text="y\n")],
    )
    features.did_change(server(fake), change)
    assert fake.docs.dirty == {uri}
    assert foresee.calls == []  # nothing in review: nothing to foresee
    fake.reviews["t1"] = object()
    features.did_change(server(fake), change)
    assert foresee.calls == [("changed", (uri,))]
    fake.reviews.clear()
    followed["t0"] = object()  # applied, its accepted hunks followed: an undo may reopen one
    features.did_change(server(fake), change)
    assert foresee.calls == [("changed", (uri,))] * 2
    features.did_save(server(fake), types.DidSaveTextDocumentParams(text_document=doc(uri)))
    assert fake.docs.dirty == set()


def test_settings_are_merged_and_the_ide_server_follows_them(tmp_path: Path) -> None:
    fake = FakeServer([tmp_path])
    ide = fake.parts[ClaudeIde] = Recorder(running=False)
    ide.sync = lambda: asyncio.sleep(0)
    on = types.DidChangeConfigurationParams(settings={"baton": {"claudeIde": True}})
    features.did_change_configuration(server(fake), on)
    assert fake.spawned == []  # no broker yet: it starts the IDE server when it starts
    fake.supervisor = object()
    features.did_change_configuration(server(fake), on)
    assert fake.spawned == ["Claude Code IDE server"]
    off = types.DidChangeConfigurationParams(settings={"baton": {"claudeIde": False}})
    ide.running = False
    features.did_change_configuration(server(fake), off)
    assert fake.settings.claude_ide is False
    assert fake.spawned == ["Claude Code IDE server"]  # already as the setting says
    bad = types.DidChangeConfigurationParams(settings={"baton": {"progressInterval": "soon"}})
    features.did_change_configuration(server(fake), bad)
    assert fake.warnings  # said, not raised


def test_new_folders_reach_the_roots_the_endpoint_and_the_ide_server(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    fake = FakeServer([a, b])
    fake.endpoint = Endpoint()
    ide = fake.parts[ClaudeIde] = Recorder()
    params = types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(added=[], removed=[])
    )
    features.did_change_folders(server(fake), params)
    roots = sorted([str(a.resolve()), str(b.resolve())])
    assert sorted(fake.roots) == roots
    assert fake.endpoint.roots == roots
    assert ide.calls == [("set_workspace_folders", (roots,))]


async def test_a_task_asking_a_question_offers_a_reply_on_its_lines(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("one\ntwo\nthree\n")
    uri = path_to_uri(tmp_path / "a.py")
    fake = FakeServer([tmp_path], {uri: "one\ntwo\nthree\n"})
    task = Task(
        id="8kd0m2qh3xz",
        instruction="Rename it",
        root=str(tmp_path),
        title="Rename it",
        state=TaskState.NEEDS_INPUT,
        message="Which name?",
        targets=[Target("a.py", 2, 2)],
    )
    fake.questions.update(task)

    def at(line: int) -> types.CodeActionParams:
        where = types.Range(types.Position(line, 0), types.Position(line, 0))
        return types.CodeActionParams(
            text_document=doc(uri),
            range=where,
            context=types.CodeActionContext(diagnostics=[], only=[REPLY_KIND]),
        )

    on = features.code_action(server(fake), at(1))
    assert [a.title for a in on] == ["Baton: Reply to Rename it"]
    assert on[0].command is not None and on[0].command.arguments == [{"taskId": task.id}]
    assert features.code_action(server(fake), at(0)) == []

    hover = await features.hover_at(
        server(fake), types.HoverParams(text_document=doc(uri), position=types.Position(1, 0))
    )
    assert hover is not None and "Which name?" in str(hover.contents)


async def test_no_hover_when_nothing_is_in_review_or_asking(tmp_path: Path) -> None:
    uri = path_to_uri(tmp_path / "a.py")
    fake = FakeServer([tmp_path], {uri: "x\n"})
    params = types.HoverParams(text_document=doc(uri), position=types.Position(0, 0))
    assert await features.hover_at(server(fake), params) is None


def test_a_cancelled_progress_goes_to_the_progress_feature(tmp_path: Path) -> None:
    fake = FakeServer([tmp_path])
    progress = fake.parts[Progress] = Recorder()
    params = types.WorkDoneProgressCancelParams(token="baton/8kd0/1")
    features.progress_cancel(server(fake), params)
    assert progress.calls == [("cancelled", ("baton/8kd0/1",))]


async def test_a_command_that_names_no_task_fails_with_the_stores_words() -> None:
    async def missing(ls: BatonServer, args: Args) -> Any:
        raise UnknownTask("zz9")

    run = commands._command("baton.inspect", missing, False)
    with pytest.raises(JsonRpcException) as info:
        await run(server(FakeServer([])), {"taskId": "zz9"})
    assert info.value.code == commands.REQUEST_FAILED
    assert info.value.message == "no task 'zz9'"


def test_positions_and_uris_as_pygls_reads_them(tmp_path: Path) -> None:
    assert units("é😀x", "utf-16") == 4
    assert units("é😀x", "utf-8") == 7
    assert units("é😀x", "utf-32") == 3
    path = tmp_path / "a b" / "c@d.py"
    assert uri_to_path(path_to_uri(path)) == path
    assert uri_to_path("untitled:Untitled-1") is None


class Hooks(Feature):
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def on_event(self, event: Event) -> None:
        self.log.append(f"{self.name} event")

    async def stop(self) -> None:
        self.log.append(f"{self.name} stop")


class Other(Hooks):
    pass


async def test_features_get_the_hooks_in_the_order_they_were_given() -> None:
    srv = BatonServer()
    log: list[str] = []
    first, second = Hooks("first", log), Other("second", log)
    srv.add_feature(first)
    srv.add_feature(second)
    with pytest.raises(ValueError):
        srv.add_feature(Hooks("again", log))
    srv._on_event(Event(EventType.TEXT, {"text": "hi"}, task_id="t1"))
    await srv.stop_broker()
    assert log == ["first event", "second event", "first stop", "second stop"]
    assert srv.get_feature(Other) is second
    assert srv.get_feature(Hooks) is first  # the first given of that class or a subclass
    with pytest.raises(LookupError):
        srv.get_feature(Notifier)


def test_the_language_server_has_every_feature() -> None:
    srv = create_language_server()
    for kind in (ClaudeIde, Progress, Transcripts, Notifier, PermissionPrompts, Foresee):
        assert isinstance(srv.get_feature(kind), kind)
