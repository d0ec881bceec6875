"""``baton lsp``: an editor's undo of accepted hunks is a decision (issue 17, item 1).

Accept-all goes through ``workspace/applyEdit``; the user's undo puts the old text back in
the document (a ``didChange``) and the client sends ``baton.reopen``: the hunks are pending
again and the applied task is in review. The redo puts the new text back and the client
sends ``baton.reaccept``: applied again. The file on disk is never written by the server.
Runs once with Neovim's recorded capabilities and once with VS Code's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import fake_script
from tests.e2e.lsp_support import EDITORS, Document, Session, start, stop, wait_for

APP = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
NEW = "def a():\n    return 10\n\n\ndef b():\n    return 20\n"
EDIT_TWO = (
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
)


@pytest.fixture(params=EDITORS)
async def lsp(
    request: pytest.FixtureRequest, repo: Path, baton_home: Path
) -> AsyncIterator[Session]:
    session = await start(request.param, repo, baton_home)
    yield session
    await stop(session)


async def test_undo_and_redo_of_accept_all_reopen_and_reaccept(lsp: Session) -> None:
    doc = lsp.open("app.py")
    started = await lsp.command(
        "baton.delegate",
        {"uri": doc.uri, "instruction": fake_script(*EDIT_TWO)},
    )
    tid = started["taskId"]
    assert await lsp.settle(tid) == "review"
    diff = await lsp.command("baton.diff", {"taskId": tid})
    ids = [h["id"] for h in diff["files"][0]["hunks"]]

    accepted = await lsp.command("baton.accept", {"taskId": tid})
    assert sorted(accepted["applied"]) == sorted(ids) and accepted["state"] == "applied"
    await wait_for(lambda: doc.text == NEW, what="the accept's edit in the document")

    # Before the undo the document holds the hunks: nothing is reopened.
    kept = await lsp.command("baton.reopen", {"taskId": tid, "hunkIds": ids})
    assert kept["reopened"] == [] and kept["state"] == "applied" and len(kept["kept"]) == 2

    lsp.change(doc, APP)  # the user's undo
    reopened = await lsp.command("baton.reopen", {"taskId": tid, "hunkIds": ids})
    assert sorted(reopened["reopened"]) == sorted(ids) and reopened["state"] == "review"
    last = await wait_for(
        lambda: (d := lsp.rec.diffs_of(tid)[-1])["state"] == "review" and d,
        what="the diff in review again",
    )
    assert [h["state"] for h in last["files"][0]["hunks"]] == ["pending", "pending"]
    await wait_for(lambda: lsp.rec.status[-1]["review"] == 1, what="counted in review again")

    lsp.change(doc, NEW)  # the redo
    redone = await lsp.command("baton.reaccept", {"taskId": tid, "hunkIds": ids})
    assert sorted(redone["reaccepted"]) == sorted(ids) and redone["state"] == "applied"
    assert (lsp.repo / "app.py").read_text() == APP, "the server wrote the user's file"
    last = await wait_for(
        lambda: (d := lsp.rec.diffs_of(tid)[-1])["state"] == "applied" and d,
        what="the diff applied again",
    )
    assert [h["state"] for h in last["files"][0]["hunks"]] == ["accepted", "accepted"]


async def _accepted_all(lsp: Session) -> tuple[str, list[str], Document]:
    doc = lsp.open("app.py")
    started = await lsp.command(
        "baton.delegate", {"uri": doc.uri, "instruction": fake_script(*EDIT_TWO)}
    )
    tid = started["taskId"]
    assert await lsp.settle(tid) == "review"
    diff = await lsp.command("baton.diff", {"taskId": tid})
    ids = sorted(h["id"] for h in diff["files"][0]["hunks"])
    accepted = await lsp.command("baton.accept", {"taskId": tid})
    assert accepted["state"] == "applied"
    await wait_for(lambda: doc.text == NEW, what="the accept's edit in the document")
    await wait_for(
        lambda: lsp.rec.diffs_of(tid)[-1]["state"] == "applied", what="the applied diff sent"
    )
    return tid, ids, doc


async def test_a_plain_clients_undo_and_redo_are_seen_from_its_changes(lsp: Session) -> None:
    """A client that only sends didChange (no baton.reopen): the server sees the undo."""
    tid, _, doc = await _accepted_all(lsp)
    lsp.change(doc, APP)  # the user's undo; nothing else is said
    last = await wait_for(
        lambda: (d := lsp.rec.diffs_of(tid)[-1])["state"] == "review" and d,
        what="the undone hunks pending again, from the document alone",
    )
    assert [h["state"] for h in last["files"][0]["hunks"]] == ["pending", "pending"]
    assert await lsp.state(tid) == "review"

    lsp.change(doc, NEW)  # the redo
    last = await wait_for(
        lambda: (d := lsp.rec.diffs_of(tid)[-1])["state"] == "applied" and d,
        what="the redone hunks accepted again, from the document alone",
    )
    assert [h["state"] for h in last["files"][0]["hunks"]] == ["accepted", "accepted"]
    assert (lsp.repo / "app.py").read_text() == APP, "the server wrote the user's file"


async def test_a_baton_clients_report_after_the_server_saw_the_undo_reopens_once(
    lsp: Session,
) -> None:
    tid, ids, doc = await _accepted_all(lsp)
    lsp.change(doc, APP)
    await wait_for(
        lambda: lsp.rec.diffs_of(tid)[-1]["state"] == "review", what="reopened by the server"
    )
    late = await lsp.command("baton.reopen", {"taskId": tid, "hunkIds": ids})  # the client's
    assert sorted(late["reopened"]) == ids and late["kept"] == [] and late["state"] == "review"
    shown = await lsp.command("baton.inspect", {"taskId": tid})
    reopens = [e for e in shown["events"] if "reopened" in str(e.get("data", {}))]
    assert len(reopens) == 1, reopens  # one decision, not two
