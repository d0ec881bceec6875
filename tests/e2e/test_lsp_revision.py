"""``baton lsp``: a revision turn that leaves nothing to decide is told to the user (issue 17).

The user comments on a hunk; the agent answers with no change, or reverts its change. The
editor gets a message saying so ("the revision changed nothing" / "no hunks left") and the
task's transcript has it. Runs once with Neovim's recorded capabilities and once with VS
Code's, so both editors get the same message from the server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import fake_script
from tests.e2e.lsp_support import EDITORS, Session, start, stop, wait_for

EDIT = {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"}


@pytest.fixture(params=EDITORS)
async def lsp(
    request: pytest.FixtureRequest, repo: Path, baton_home: Path
) -> AsyncIterator[Session]:
    session = await start(request.param, repo, baton_home)
    yield session
    await stop(session)


async def _revised(lsp: Session, *second_turn: dict[str, str]) -> str:
    doc = lsp.open("app.py")
    script = fake_script(EDIT, {"end_turn": "first result"}, *second_turn)
    started = await lsp.command("baton.delegate", {"uri": doc.uri, "instruction": script})
    tid = str(started["taskId"])
    assert await lsp.settle(tid) == "review"
    diff = await lsp.command("baton.diff", {"taskId": tid})
    hid = diff["files"][0]["hunks"][0]["id"]
    comment = {"uri": doc.uri, "start": 2, "end": 2, "text": "is 10 right?", "hunkId": hid}
    await lsp.command("baton.revise", {"taskId": tid, "comments": [comment]})
    return tid


def _messages(lsp: Session) -> list[str]:
    return [m.message for m in lsp.client.messages]


async def test_a_revision_that_changes_nothing_is_told(lsp: Session) -> None:
    tid = await _revised(lsp, {"say": "It is right as it is."})
    told = await wait_for(
        lambda: [m for m in _messages(lsp) if "changed nothing" in m],
        what="a message that the revision changed nothing",
    )
    assert len(told) == 1 and told[0].endswith(": the revision (turn 2) changed nothing")
    assert await lsp.settle(tid) == "review"
    shown = await lsp.command("baton.inspect", {"taskId": tid})
    assert "the revision (turn 2) changed nothing" in str(shown)


async def test_a_revision_that_reverts_its_change_says_no_hunks_are_left(lsp: Session) -> None:
    await _revised(lsp, {"edit": "app.py", "old": "    return 10\n", "new": "    return 1\n"})
    told = await wait_for(
        lambda: [m for m in _messages(lsp) if "left no hunks" in m],
        what="a message that no hunks are left",
    )
    assert len(told) == 1


async def test_a_rewrite_of_an_accepted_hunk_is_a_pending_change_of_the_accepted_lines(
    lsp: Session,
) -> None:
    doc = lsp.open("app.py")
    script = fake_script(
        EDIT,
        {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},  # in review still
        {"end_turn": "first result"},
        {"edit": "app.py", "old": "    return 10\n", "new": "    return 100\n"},
    )
    started = await lsp.command("baton.delegate", {"uri": doc.uri, "instruction": script})
    tid = str(started["taskId"])
    assert await lsp.settle(tid) == "review"
    diff = await lsp.command("baton.diff", {"taskId": tid})
    hid = diff["files"][0]["hunks"][0]["id"]
    await lsp.command("baton.accept", {"taskId": tid, "hunkIds": [hid]})
    await wait_for(lambda: "    return 10\n" in doc.text, what="the accept in the document")
    comment = {"uri": doc.uri, "start": 2, "end": 2, "text": "a hundred", "hunkId": hid}
    await lsp.command("baton.revise", {"taskId": tid, "comments": [comment]})

    def revised() -> dict[str, object] | None:
        for d in reversed(lsp.rec.diffs_of(tid)):
            hunks = [h for f in d["files"] for h in f["hunks"] if h.get("revised")]
            if d["final"] and d["state"] == "review" and hunks:
                return dict(hunks[0])
        return None

    hunk = await wait_for(revised, timeout=30, what="the revised hunk")
    # shown against what the user's file holds (the accepted line), not as a conflict
    assert hunk["oldText"] == "    return 10\n" and hunk["newText"] == "    return 100\n"
    assert hunk["conflict"] is False and hunk["stale"] is False and hunk["state"] == "pending"
    assert hunk["range"]["start"]["line"] == 1
    done = await lsp.command("baton.accept", {"taskId": tid, "hunkIds": [hunk["id"]]})
    assert done["applied"] == [hunk["id"]] and not done.get("conflicts")
    await wait_for(lambda: "    return 100\n" in doc.text, what="the rewrite in the document")
