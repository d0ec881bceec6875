"""Talk back from the diff with a real agent CLI: Claude Code against the scripted model
server. A comment on one hunk of a task in review becomes the next turn of the same session;
the model sees the comment (and its file:lines) in the resumed session, and the new result
is an interdiff: the hunk accepted before stays accepted, the revised one is new.

The CLI comes from `scripts/install-agents` (`.cache/agents`); skipped LOUDLY without it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.core.diff import HunkState
from baton.core.lifecycle import TaskState
from baton.core.revision import Comment
from baton.runtime.revision import since_last_review
from tests.e2e.test_worker_claude import claude_profile, require, user_texts, world
from tests.support.modelserver import Answer, Script, write_file

pytestmark = pytest.mark.agents

COMMENT = "Say goodbye instead of hello in this file, please."
TURNS = (
    write_file("hello.txt", "hello from the model\n"),
    write_file("notes.md", "# Notes\n"),
    Answer("Wrote hello.txt and notes.md."),
    write_file("hello.txt", "goodbye from the model\n"),
    Answer("hello.txt says goodbye now."),
)


async def test_a_comment_on_a_hunk_reaches_claude_in_the_resumed_session(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    require("claude")
    async with world(baton_home, tmp_path, Script.of(*TURNS), claude_profile) as w:
        tid = await w.delegate(repo, "Create hello.txt with a greeting and notes.md.")
        assert await w.settle(tid) == TaskState.REVIEW, (await w.sup.get(tid)).message
        files, _ = await w.sup.diff(tid)
        ids = {f.path: f.hunks[0].id for f in files}
        assert sorted(ids) == ["hello.txt", "notes.md"]
        await w.sup.accept(tid, [ids["notes.md"]])
        assert (repo / "notes.md").read_text() == "# Notes\n"
        asked = len(w.srv.main_requests)

        await w.sup.revise(tid, [Comment("hello.txt", 1, 1, COMMENT, ids["hello.txt"])])
        assert await w.settle(tid) == TaskState.REVIEW, (await w.sup.get(tid)).message
        attempts = await w.sup.attempts(tid)
        assert [a.reason for a in attempts] == ["first", "reply"]
        assert attempts[1].session_id == attempts[0].session_id  # resumed, not a new session
        revision_requests = w.srv.main_requests[asked:]
        assert revision_requests, "the revision turn never asked the model"
        body = user_texts(revision_requests[0].body)
        assert COMMENT in body  # the comment reached the model
        assert "hello.txt:1" in body and "hello from the model" in body  # where, and what
        assert "Create hello.txt" in body  # in the same session: the first turn is there too

        files, final = await w.sup.diff(tid)
        assert final
        states = {f.path: (f.hunks[0].new_text, f.hunks[0].state) for f in files}
        assert states == {
            "notes.md": ("# Notes\n", HunkState.ACCEPTED),
            "hello.txt": ("goodbye from the model\n", HunkState.PENDING),
        }
        since = since_last_review(await w.sup.get(tid), files)
        assert since is not None
        assert since.kept == (ids["notes.md"],) and since.dropped == (ids["hello.txt"],)
        assert len(since.new) == 1
        await w.sup.accept(tid)
        assert (repo / "hello.txt").read_text() == "goodbye from the model\n"
        w.only_local()
