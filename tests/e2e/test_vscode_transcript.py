"""The live transcript in real VS Code (code-server, headless Chromium, the built .vsix and the
real ``baton lsp`` with the fake agent; the harness of vscode_support): "Baton: Inspect Task"
while the agent streams opens a read-only ``baton-transcript:`` document that grows sentence
by sentence — never a word cut in half, never an untitled or dirty buffer — until the task is
ready for review; the Baton log says each step of the task's life. The clicking is
clients/vscode/test/e2e/transcript.mjs; screenshots go to artifacts/vscode-transcript/.
"""

from __future__ import annotations

import pytest

from tests.e2e.vscode_support.workbench import ROOT, VSCode

pytestmark = pytest.mark.slow

ARTIFACTS = ROOT / "artifacts" / "vscode-transcript"
INSTRUCTION = "Make the first function return ten"
FIRST = "Looking at app.py first."
SECOND = "Then I will make the number bigger."
SCRIPT = {
    "steps": [
        {"sleep": 1.0},
        {"say": f"{FIRST} ", "chunks": 5, "delay": 0.3},
        {"sleep": 4.0},
        {"say": f"{SECOND} ", "chunks": 8, "delay": 0.3},
        {"sleep": 1.0},
        # more lines than the editor shows: the transcript scrolls to follow its end
        *[{"read": "notes.txt"} for _ in range(40)],
        {"read": "app.py"},
        {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
        {"usage": {"input": 120, "output": 30}},
        {"sleep": 1.0},
    ],
    "summary": "The first function returns ten.",
}


def test_inspect_shows_the_live_transcript(vscode: VSCode) -> None:
    # the driver reads the transcript's lines from the screen: one screen line each
    settings = vscode.settings(SCRIPT, **{"[markdown]": {"editor.wordWrap": "off"}})
    run = vscode.run(
        "transcript.mjs",
        ARTIFACTS,
        240,
        settings,
        instruction=INSTRUCTION,
        BATON_E2E_FIRST=FIRST,
        BATON_E2E_SECOND=SECOND,
    )
    by, log = run.by, run.log
    opened = by["transcript-opened"]
    assert f"# {INSTRUCTION}" in opened["text"]
    # beside the file (each group has its active tab), never an untitled buffer
    labels = [t["label"] for t in opened["tabs"] if t["active"]]
    assert labels[0] == "app.py" and labels[1].startswith("Transcript: Make the first"), labels
    assert not any("Untitled" in t["label"] for t in opened["tabs"]), opened["tabs"]
    # While the agent paused between its sentences, the first showed alone, the task running.
    assert by["first-sentence"]["agent"] == [FIRST], by["first-sentence"]
    assert "1 running" in by["first-sentence"]["status"]
    # It grew live, and every state it showed had whole sentences only.
    assert by["second-sentence"]["agent"] == [f"{FIRST} {SECOND}"]
    seen = [a for a in by["ready-for-review"]["seenAgent"] if a]
    assert seen and all(a in ([FIRST], [f"{FIRST} {SECOND}"]) for a in seen), seen
    review = by["ready-for-review"]
    assert "1 ready for review" in review["status"]
    # Monaco draws only the lines in view: the end is drawn, the header scrolled away.
    assert "**review**" in review["text"] and f"# {INSTRUCTION}" not in review["text"]
    for expected in ("- read `app.py` ✓", "- edit `app.py` ✓", "- 120 tokens in, 30 out"):
        assert expected in review["text"], review["text"]
    assert not any(t["dirty"] for t in review["tabs"]), review["tabs"]
    ro = by["read-only"]
    assert ro["unchanged"] and "xyz" not in ro["text"] and not any(t["dirty"] for t in ro["tabs"])
    assert not any("Transcript:" in t["label"] for t in by["closed"]["tabs"])
    conflict = by["conflict"]
    assert "conflict" in conflict["toast"] and "# mine" in by["rejected"]["text"]
    # said before the accept: the lenses of the hunk the user edited offer the four ways
    for label in ("Take theirs", "Merge view", "Ask the agent to redo it"):
        assert label in conflict["lenses"], conflict["lenses"]
    assert not any(x.startswith("Accept") for x in conflict["lenses"]), conflict["lenses"]
    assert conflict["buttons"][:4] == ["Keep mine", "Take theirs", "Merge view", "Ask the agent"]
    # The conflict toast names the task by its title, with buttons (the server's bare
    # message is not shown: the extension sets acceptReports inline).
    toast = conflict["toast"]
    assert f'"{INSTRUCTION}"' in toast or 'Baton: "' in toast, toast
    assert "Show diff" in toast and "Inspect" in toast, toast
    # The log says the task's life at info level: delegated, started, ready, the accept that
    # conflicted with the user's edit (the hunk named, and why), the reject, the end.
    for said in (
        ": delegated",
        "started (fake)",
        "review (was running)",
        "accept: 0 hunk(s) applied; 1 conflict: ",
        "kept your lines (the hunk is rejected); now rejected",
        "settled: rejected (was review)",
    ):
        assert said in log, log[-3000:]
    assert "stopped following the transcript of" in log, log[-3000:]
    run.assert_screenshots(11)
