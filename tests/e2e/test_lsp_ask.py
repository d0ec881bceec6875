"""``baton.ask`` and its code action "Ask Baton…" through ``baton lsp``, with Neovim's and
VS Code's recorded capabilities: the question is answered beside the code with nothing to
review, and a plain client picks a ready-made question."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from lsprotocol import types

from baton.surfaces.lsp.questions import ASK, ASK_KIND, ASK_TITLE, READY_QUESTIONS
from tests.conftest import fake_script
from tests.e2e.lsp_support import EDITORS, Session, start, stop, wait_for

APP = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"


@pytest.fixture(params=EDITORS)
async def lsp(
    request: pytest.FixtureRequest, repo: Path, baton_home: Path
) -> AsyncIterator[Session]:
    session = await start(request.param, repo, baton_home, options={"progressInterval": 0.05})
    yield session
    await stop(session)


async def test_ask_baton_on_a_selection_answers_beside_the_code(lsp: Session) -> None:
    doc = lsp.open("app.py")
    actions = await lsp.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(doc.uri),
            range=types.Range(types.Position(0, 0), types.Position(1, 10)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    (action,) = [a for a in actions or [] if isinstance(a, types.CodeAction) and a.kind == ASK_KIND]
    assert action.title == ASK_TITLE and action.command is not None
    assert action.command.command == ASK
    (args,) = action.command.arguments or []
    assert "question" not in args  # the client asks for it
    question = fake_script({"read": "app.py"}, summary="a() returns 1.")
    result = await lsp.command(ASK, {**args, "question": question})
    task_id = result["taskId"]
    assert await lsp.settle(task_id) == "answered"
    shown = await wait_for(lambda: lsp.client.shown_documents, what="answer shown")
    assert shown[0].take_focus is False and shown[0].uri.endswith("/answer.md")
    assert "a() returns 1." in Path(shown[0].uri.removeprefix("file://")).read_text()
    inspect = await lsp.command("baton.inspect", {"taskId": task_id, "events": 0})
    assert inspect["task"]["kind"] == "ask" and inspect["task"]["action"] == "explain"
    assert inspect["task"]["targets"][0]["start_line"] == 1
    diff = await lsp.command("baton.diff", {"taskId": task_id})
    assert diff["files"] == []  # nothing offered for review
    assert (lsp.repo / "app.py").read_text() == APP


async def test_a_plain_client_picks_a_ready_made_question(lsp: Session) -> None:
    lsp.rec.pick = 2
    lines = {"start": {"line": 3, "character": 0}, "end": {"line": 4, "character": 5}}
    args = {"uri": lsp.uri("app.py"), "range": lines}
    result = await lsp.command(ASK, args)
    (asked,) = lsp.rec.questions
    assert "app.py:4-5" in asked.message
    assert [a.title for a in asked.actions or []] == list(READY_QUESTIONS)
    inspect = await lsp.command("baton.inspect", {"taskId": result["taskId"], "events": 0})
    assert inspect["task"]["instruction"] == READY_QUESTIONS[2]
    await lsp.settle(result["taskId"])
    lsp.rec.pick = None
    assert await lsp.command(ASK, args) == {"taskId": None, "cancelled": True}
