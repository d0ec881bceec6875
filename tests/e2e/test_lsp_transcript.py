"""``baton.transcript`` end to end: a client follows a task's transcript while the fake agent
streams, applying each ``baton/transcript`` change, and ends with the lines a fresh request
gives; the agent's text shows as whole sentences at every step, never a word cut in half."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import fake_script
from tests.e2e.lsp_support import EDITORS, Session, start, stop, wait_for

SENTENCES = "Looking at app.py first. Then I will make both numbers bigger. "


@pytest.fixture(params=EDITORS)
async def lsp(
    request: pytest.FixtureRequest, repo: Path, baton_home: Path
) -> AsyncIterator[Session]:
    session = await start(request.param, repo, baton_home)
    yield session
    await stop(session)


async def test_a_followed_transcript_streams_whole_sentences(lsp: Session) -> None:
    instruction = fake_script(
        {"say": SENTENCES, "chunks": 12, "delay": 0.15},
        {"read": "app.py"},
        {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
        {"usage": {"input": 120, "output": 30}},
        summary="Both numbers are bigger.",
    )
    result = await lsp.command(
        "baton.delegate",
        {"uri": lsp.uri("app.py"), "kind": "delegate", "instruction": instruction},
    )
    task_id = str(result["taskId"])
    first = await lsp.command("baton.transcript", {"taskId": task_id, "follow": True})
    assert first["following"] is True and first["lines"][0] == "# Do the scripted work"
    shown, seq = list(first["lines"]), int(first["seq"])
    views: list[list[str]] = []

    def apply() -> None:
        nonlocal shown, seq
        for note in [n for n in lsp.rec.transcripts if n["taskId"] == task_id]:
            lsp.rec.transcripts.remove(note)
            if note["seq"] <= seq:
                continue
            assert note["since"] == seq, (note, seq)
            assert note["start"] <= len(shown)
            shown[note["start"] :] = note["lines"]
            seq = note["seq"]
            views.append(list(shown))

    await lsp.settle(task_id, "review", timeout=40)
    await wait_for(lambda: (apply(), any("**review**" in line for line in shown))[1],
                   what="the review line in the followed transcript")  # fmt: skip
    # It streamed: the sentences arrived one after the other, over several notifications.
    said = [v for v in views if any(line.startswith("Looking at") for line in v)]
    assert len(views) >= 3 and said, views
    assert any("Looking at app.py first." in v for v in said), said  # the first one alone
    # Never a fragment: the agent's line is its first sentence, or both, at every step.
    whole = {"Looking at app.py first.", SENTENCES.strip()}
    for view in said:
        assert next(line for line in view if line.startswith("Looking")) in whole, view
    # What the client built is what a fresh request gives.
    again = await lsp.command("baton.transcript", {"taskId": task_id})
    assert again["following"] is False and again["lines"] == shown
    assert "Looking at app.py first. Then I will make both numbers bigger." in shown
    assert "- read `app.py` ✓" in shown and "- edit `app.py` ✓" in shown
    assert "- 120 tokens in, 30 out" in shown
    assert "Both numbers are bigger." in shown  # the result, not said before
    # Unfollowed: no more notifications for it.
    lsp.rec.transcripts.clear()
    await lsp.command("baton.reject", {"taskId": task_id})
    await lsp.settle(task_id, "rejected")
    assert [n for n in lsp.rec.transcripts if n["taskId"] == task_id] == []
