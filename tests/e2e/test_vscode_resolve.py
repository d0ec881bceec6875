"""Conflicts settled in real VS Code (code-server, headless Chromium, the built .vsix and the
real ``baton lsp`` with the fake agent; the harness of vscode_support). The user edits the
lines of both hunks of a task; before any accept their lenses say they conflict and offer
the ways to settle them: "Merge view" opens the diff editor beside the agent's read-only
version, "Ask the agent to redo it" runs a turn against the user's text whose new hunk then
applies, "Take theirs" puts the agent's line in place of the user's. (Keep mine, through the
accept's warning, is in test_vscode_transcript.py.) The clicking is
clients/vscode/test/e2e/resolve.mjs; screenshots go to artifacts/vscode-resolve/.
"""

from __future__ import annotations

import pytest

from tests.e2e.vscode_support.workbench import ROOT, VSCode

pytestmark = pytest.mark.slow

ARTIFACTS = ROOT / "artifacts" / "vscode-resolve"
INSTRUCTION = "Make both functions return ten times more"
SCRIPT = {
    "steps": [
        {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
        {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
        {"end_turn": "both bigger"},
        # the redo turn: the agent finds the user's line in its checkout
        {"edit": "app.py", "old": "    return 1  # mine\n", "new": "    return 10  # mine\n"},
    ],
    "summary": "Both functions return ten times more.",
}


def test_conflicts_are_foreseen_and_settled_by_merge_view_redo_and_take_theirs(
    vscode: VSCode,
) -> None:
    run = vscode.run(
        "resolve.mjs", ARTIFACTS, 300, vscode.settings(SCRIPT), instruction=INSTRUCTION
    )
    by, log = run.by, run.log
    edited = by["edited"]
    # said before any accept: no Accept lens on a hunk whose lines the user changed
    assert not any(x.startswith("Accept") for x in edited["lenses"]), edited["lenses"]
    merge = by["merge-view"]
    assert any("↔ Baton" in t["label"] for t in merge["tabs"]), merge["tabs"]
    assert "return 1  # mine" in merge["mine"] and "return 10" in merge["theirs"]
    assert "xyz" not in merge["theirsAfterTyping"]  # the agent's side is read-only
    redone = by["redo"]["lenses"]
    assert "Accept (edited since)" in redone, redone  # the redone hunk applies
    assert "return 20" in by["take-theirs"]["text"] and "2  # mine" not in by["take-theirs"]["text"]
    done = by["accept-redone"]["text"]
    assert "return 10  # mine" in done and "return 20" in done
    assert "idle" in by["accept-redone"]["status"]
    for said in (
        "asked the agent to redo the hunk against your text; now running",
        "took the agent's lines; now review",
    ):
        assert said in log, log[-3000:]
    run.assert_screenshots()
