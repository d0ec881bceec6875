"""``baton lsp`` for plain LSP clients (issue 17, item 7): a hover shows a pending hunk's
proposed text before it is accepted, and a task's question gets a "Reply to" code action
whose reply any client can give (``window/showMessageRequest``).

Real ``baton lsp`` and the fake agent; each test runs with Neovim's and VS Code's recorded
capabilities.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from baton.surfaces.lsp.asking import READY_ANSWERS, REPLY_KIND
from tests.conftest import fake_script
from tests.e2e.lsp_support import EDITORS, Document, Session, start, stop, wait_for

APP = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"


@pytest.fixture(params=EDITORS)
async def lsp(
    request: pytest.FixtureRequest, repo: Path, baton_home: Path
) -> AsyncIterator[Session]:
    session = await start(request.param, repo, baton_home)
    yield session
    await stop(session)


def rng(a: int, b: int) -> dict[str, Any]:
    return {"start": {"line": a, "character": 0}, "end": {"line": b, "character": 0}}


async def hover(lsp: Session, doc: Document, line: int) -> str | None:
    found = await lsp.client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            position=types.Position(line=line, character=4),
        )
    )
    if found is None:
        return None
    assert isinstance(found.contents, types.MarkupContent)
    assert found.contents.kind == types.MarkupKind.Markdown
    return found.contents.value


async def actions(lsp: Session, doc: Document, line: int) -> list[types.CodeAction]:
    found = await lsp.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            range=types.Range(types.Position(line, 0), types.Position(line, 0)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    return [a for a in found or [] if isinstance(a, types.CodeAction)]


async def eventually(
    get: Callable[[], Awaitable[Any]], pred: Callable[[Any], bool], what: str
) -> Any:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        value = await get()
        if pred(value):
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_hover_shows_the_pending_hunk_as_a_diff(lsp: Session) -> None:
    doc = lsp.open("app.py")
    script = fake_script(
        {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n    # ten\n"},
        {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
    )
    started = await lsp.command(
        "baton.delegate", {"uri": doc.uri, "instruction": script, "kind": "delegate"}
    )
    tid, title = started["taskId"], started["title"]
    assert await lsp.settle(tid) == "review"
    await wait_for(lambda: tid in {d["taskId"] for d in lsp.rec.diffs}, what="the diff")
    diff = await lsp.command("baton.diff", {"taskId": tid})
    first, second = (h["id"] for h in diff["files"][0]["hunks"])

    text = await hover(lsp, doc, 1)
    assert text is not None
    assert "```diff\n-    return 1\n+    return 10\n+    # ten\n```" in text
    assert title in text and "pending" in text
    assert f'`baton.accept` with `{{"taskId": "{tid}", "hunkIds": ["{first}"]}}`' in text
    assert f'"Baton: Accept this change ({title})"' in text
    assert second not in text, "the hover shows the hunk under the cursor only"
    assert await hover(lsp, doc, 3) is None, "a line no hunk touches has no hover"

    # The user edits above the hunk: the hover follows it to its new line.
    lsp.change(doc, "# a comment\n" + APP)
    text = await hover(lsp, doc, 2)
    assert text is not None and "+    return 10" in text
    assert "+    return 20" in (await hover(lsp, doc, 6) or "")

    accepted = await lsp.command("baton.accept", {"taskId": tid, "hunkIds": [first]})
    assert accepted["applied"] == [first]
    await wait_for(lambda: "    return 10\n" in doc.text, what="the accept's edit")
    # (the server reads the decided diff a moment after the accept)
    await eventually(lambda: hover(lsp, doc, 2), lambda t: t is None, "no hover once accepted")
    assert "+    return 20" in (await hover(lsp, doc, 7) or "")


async def test_a_question_offers_reply_on_its_target_lines(lsp: Session) -> None:
    doc = lsp.open("app.py")
    script = fake_script(
        {"ask": "Which value should a() return?"},
        {"edit": "app.py", "old": "return 1", "new": "return 42"},
    )
    started = await lsp.command(
        "baton.delegate", {"uri": doc.uri, "range": rng(0, 2), "instruction": script}
    )
    tid, title = started["taskId"], started["title"]
    assert await lsp.settle(tid) == "needs_input"
    reply_title = f"Baton: Reply to {title}"

    async def replies(line: int) -> list[types.CodeAction]:
        return [a for a in await actions(lsp, doc, line) if a.title == reply_title]

    # The notifier reads the new state after a short debounce.
    (action,) = await eventually(lambda: replies(1), bool, "a Reply action on the target")
    assert action.kind == REPLY_KIND
    assert action.command is not None and action.command.command == "baton.reply"
    assert list(action.command.arguments or []) == [{"taskId": tid}]
    assert await replies(4) == [], "the action stays on the task's target lines"

    asked = await hover(lsp, doc, 0)
    assert asked is not None and "Which value should a() return?" in asked
    assert reply_title in asked

    # Dismissed: nothing is sent, the task still waits.
    lsp.rec.pick = None
    dismissed = await lsp.command("baton.reply", {"taskId": tid})
    assert dismissed["cancelled"] is True and dismissed["state"] == "needs_input"
    question = lsp.rec.questions[-1]
    assert question.message == f"Baton: {title} asks: Which value should a() return?"
    assert [a.title for a in question.actions or []] == list(READY_ANSWERS)
    assert await lsp.state(tid) == "needs_input"

    # Picked: the answer goes to the agent's session, which goes on to its edit.
    lsp.rec.pick = 0
    moved = await lsp.command(action.command.command, *(action.command.arguments or []))
    assert moved["state"] == "running"
    assert await lsp.settle(tid) == "review"
    seen = await lsp.command("baton.inspect", {"taskId": tid})
    said = "".join(str(e["data"].get("text", "")) for e in seen["events"] if e["type"] == "text")
    assert f"reply: {READY_ANSWERS[0]}" in said
    await eventually(lambda: replies(1), lambda found: found == [], "no Reply once answered")


async def test_a_client_that_reports_accepts_itself_gets_no_warning(
    repo: Path, baton_home: Path
) -> None:
    lsp = await start(EDITORS[1], repo, baton_home, options={"acceptReports": "inline"})
    try:
        notes = lsp.open("notes.txt")
        script = fake_script({"edit": "notes.txt", "old": "three", "new": "THREE"})
        started = await lsp.command("baton.delegate", {"uri": notes.uri, "instruction": script})
        tid = started["taskId"]
        assert await lsp.settle(tid) == "review"
        lsp.change(notes, notes.text.replace("three", "3, mine"))
        result = await lsp.command("baton.accept", {"taskId": tid})
        assert result["applied"] == [] and len(result["conflicts"]) == 1
        await lsp.command("baton.status")  # a round trip after any warning would have come
        assert not [m for m in lsp.client.messages if "conflict" in m.message]
    finally:
        await stop(lsp)
