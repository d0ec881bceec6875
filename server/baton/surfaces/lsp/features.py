"""LSP features other than commands: lifecycle, document sync, settings, code actions,
code lenses, hover and progress cancel. Each handler takes the server as its first parameter."""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types

import baton.surfaces.lsp.actions as actions
import baton.surfaces.lsp.asking as asking
import baton.surfaces.lsp.editor_settings as editor_settings
import baton.surfaces.lsp.hover as hover
import baton.surfaces.lsp.lenses as lenses
from baton.surfaces.lsp.foresee import Foresee
from baton.surfaces.lsp.ide import ClaudeIde
from baton.surfaces.lsp.progress import Progress
from baton.surfaces.lsp.protocol import answer_later
from baton.surfaces.lsp.server import BatonServer


def apply_settings(ls: BatonServer, raw: Any) -> None:
    ls.settings, warnings = editor_settings.merge(ls.settings, raw)
    for warning in warnings:
        ls.warn(warning)


def initialize(ls: BatonServer, params: types.InitializeParams) -> None:
    ls.client_name = params.client_info.name if params.client_info else None
    apply_settings(ls, params.initialization_options)
    for folder in ls.folders():
        ls.roots.add(str(folder.resolve()))


async def initialized(ls: BatonServer, params: types.InitializedParams) -> None:
    # pygls owns the loop: the broker starts here, inside it.
    ls.spawn(ls.start_broker(), "start broker")


async def shutdown(ls: BatonServer, params: None) -> None:
    await ls.stop_broker()


def did_change_configuration(ls: BatonServer, params: types.DidChangeConfigurationParams) -> None:
    apply_settings(ls, params.settings)
    ide = ls.get_feature(ClaudeIde)
    if ls.supervisor is not None and ls.settings.claude_ide != ide.running:
        ls.spawn(ide.sync(), "Claude Code IDE server")


def did_open(ls: BatonServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.docs.opened(params.text_document.uri)


def did_change(ls: BatonServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.docs.changed(params.text_document.uri)
    foresee = ls.get_feature(Foresee)
    if ls.reviews or foresee.undone.tasks:  # hunks to place, or accepted ones to follow
        foresee.changed(params.text_document.uri)


def did_save(ls: BatonServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.docs.saved(params.text_document.uri)


def did_close(ls: BatonServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.docs.closed(params.text_document.uri)


def did_change_folders(ls: BatonServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    for folder in ls.folders():
        ls.roots.add(str(folder.resolve()))
    if ls.endpoint is not None:
        ls.endpoint.set_roots(sorted(ls.roots))
    ls.get_feature(ClaudeIde).set_workspace_folders(sorted(ls.roots))


def code_action(ls: BatonServer, params: types.CodeActionParams) -> Any:
    """The actions for a range: answered at once (a plain handler, answered in the
    callback that read the request) unless hunks in review must be placed there, which is
    done on a thread."""
    doc = ls.open_document(params.text_document.uri)
    count = None
    if doc is not None:
        count = doc[0].count("\n")  # no more lines than splitlines() counts
        if params.range.start.line > count:
            count = len(doc[0].splitlines())
    found = actions.code_actions(params, count)
    only = [str(k) for k in params.context.only] if params.context.only else None
    replies: list[types.CodeAction] = []
    if doc is not None and ls.questions.tasks and actions.wanted(asking.REPLY_KIND, only):
        replies = asking.reply_actions(
            ls.questions.tasks.values(), params.text_document.uri, params.range
        )
    reviews = [td for td in ls.reviews.values() if td.task.state == "review"]
    if not reviews or doc is None or not actions.wanted(lenses.REVIEW_KIND, only):
        return found + replies
    text = doc[0]

    async def with_reviews() -> list[types.CodeAction]:
        placed = await asyncio.to_thread(
            lenses.review_actions,
            reviews,
            params.text_document.uri,
            text,
            ls.encoding,
            params.range,
        )
        return found + placed + replies

    return answer_later(with_reviews())


async def hover_at(ls: BatonServer, params: types.HoverParams) -> types.Hover | None:
    """The proposed text of the pending hunk under the cursor, or a task's question."""
    uri = params.text_document.uri
    doc = ls.open_document(uri)
    reviews = list(ls.reviews.values())
    questions = list(ls.questions.tasks.values())
    if not reviews and not questions:
        return None
    current = doc[0] if doc is not None else None
    text = await asyncio.to_thread(
        hover.hover_text, reviews, questions, uri, current, ls.encoding, params.position.line
    )
    if text is None:
        return None
    caps = ls.client_capabilities.text_document
    formats = caps.hover.content_format if caps and caps.hover else None
    return types.Hover(contents=hover.markup(text, formats))


async def code_lens(ls: BatonServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    doc = ls.open_document(params.text_document.uri)
    reviews = list(ls.reviews.values())
    current = doc[0] if doc is not None else None
    return await lenses.code_lenses(reviews, params.text_document.uri, current, ls.encoding)


def progress_cancel(ls: BatonServer, params: types.WorkDoneProgressCancelParams) -> None:
    ls.get_feature(Progress).cancelled(params.token)


def register(server: BatonServer) -> None:
    server.feature(types.INITIALIZE)(initialize)
    server.feature(types.INITIALIZED)(initialized)
    server.feature(types.SHUTDOWN)(shutdown)
    server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(did_change_configuration)
    server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(did_change_folders)
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(did_open)
    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(did_change)
    server.feature(types.TEXT_DOCUMENT_DID_SAVE)(did_save)
    server.feature(types.TEXT_DOCUMENT_DID_CLOSE)(did_close)
    server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[
                types.CodeActionKind.QuickFix,
                types.CodeActionKind.Refactor,
                types.CodeActionKind.RefactorRewrite,
            ],
            resolve_provider=False,
        ),
    )(code_action)
    server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))(
        code_lens
    )
    server.feature(types.TEXT_DOCUMENT_HOVER)(hover_at)
    server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)(progress_cancel)
