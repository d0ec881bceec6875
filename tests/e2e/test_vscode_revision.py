"""Talk back from the diff in real VS Code (code-server, headless Chromium, the built .vsix
and the real ``baton lsp`` with the fake agent scripted for two turns; the harness of
vscode_support): the first hunk is accepted, a comment thread (the Comments API) is opened
on the second and "Send to the Agent" sends it; the agent's next turn in the same session
revises that hunk; the result comes back with the accepted hunk kept and the new one marked
"Accept (revised)"; "Step Back to an Earlier Turn…" shows the first turn's result, then the
second's again, which is accepted. The clicking is clients/vscode/test/e2e/comment.mjs;
screenshots go to artifacts/vscode-revision/.
"""

from __future__ import annotations

import pytest

from baton.store import Store
from tests.e2e.vscode_support.workbench import ROOT, VSCode

pytestmark = pytest.mark.slow

ARTIFACTS = ROOT / "artifacts" / "vscode-revision"
INSTRUCTION = "Make both functions return ten times more"
COMMENT = "Write it as a product, please"
SCRIPT = {
    "steps": [
        {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
        {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
        {"end_turn": "first result"},
        {"sleep": 1.0},
        {"edit": "app.py", "old": "    return 20\n", "new": "    return 2 * 10\n"},
    ],
    "summary": "Both return ten times more.",
}


def test_a_comment_thread_on_a_hunk_is_a_revision_turn(vscode: VSCode) -> None:
    run = vscode.run(
        "comment.mjs",
        ARTIFACTS,
        240,
        vscode.settings(SCRIPT),
        instruction=INSTRUCTION,
        BATON_E2E_COMMENT=COMMENT,
    )
    by, log = run.by, run.log
    assert by["first-accepted"]["ghosts"] == ["→ return 20"]
    assert "Send to the Agent" in by["thread-opened"]["buttons"], by["thread-opened"]
    assert "Reject the Hunk, Saying Why" in by["thread-opened"]["buttons"]
    assert COMMENT in by["comment-sent"]["thread"]
    revised = by["revised"]
    # the accepted hunk is still in the editor; only the revised hunk is left to review
    assert "    return 10" in revised["text"] and revised["ghosts"] == ["→ return 2 * 10"]
    assert revised["lenses"].count("Accept (revised)") == 1 and "Accept" not in revised["lenses"]
    assert revised["threads"] == 0  # the sent thread is closed once the answer is back
    # each turn is a checkpoint: back to the first turn's result (its accepted hunk kept),
    # and forward again
    back = by["stepped-back"]
    assert back["ghosts"] == ["→ return 20"] and "    return 10" in back["text"], back
    assert by["stepped-forward"]["ghosts"] == ["→ return 2 * 10"], by["stepped-forward"]
    # a thread opens on the accepted hunk's lines too, not only on pending ones
    assert "Send to the Agent" in by["thread-on-accepted"]["buttons"], by["thread-on-accepted"]
    done = by["revised-accepted"]
    assert "    return 2 * 10" in done["text"] and "idle" in done["status"]
    assert "comment on hunk" in log and "sent to the agent" in log, log[-3000:]

    store = Store(vscode.home / "baton.db")
    try:
        (task,) = store.list_tasks(limit=None)
        assert task.state == "applied"
        assert [a.reason for a in store.attempts(task.id)] == ["first", "reply"]
        prompt = task.options["turn"]["prompt"]
        assert f"app.py:6: {COMMENT}" in prompt and "    return 20" in prompt
    finally:
        store.close()
    # (the file on disk is what the editor saved: code-server auto-saves after a delay)
    run.assert_screenshots(11)
