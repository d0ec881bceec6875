"""Conflicts settled in real VS Code (code-server, headless Chromium, the built .vsix and the
real ``baton lsp`` with the fake agent; the harness of test_vscode.py). The user edits the
lines of both hunks of a task; before any accept their lenses say they conflict and offer
the ways to settle them: "Merge view" opens the diff editor beside the agent's read-only
version, "Ask the agent to redo it" runs a turn against the user's text whose new hunk then
applies, "Take theirs" puts the agent's line in place of the user's. (Keep mine, through the
accept's warning, is in test_vscode_transcript.py.) The clicking is
clients/vscode/test/e2e/resolve.mjs; screenshots go to artifacts/vscode-resolve/.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.test_vscode import (  # noqa: F401 (the fixtures tools and vsix)
    APP,
    BASE_SETTINGS,
    ROOT,
    Tools,
    code_server,
    drive,
    tools,
    vsix,
)

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
    tools: Tools,  # noqa: F811
    vsix: Path,  # noqa: F811
    repo: Path,
    baton_home: Path,
    tmp_path: Path,
) -> None:
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    assert (repo / "app.py").read_text() == APP
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    settings = {
        **BASE_SETTINGS,
        "baton.server.path": [str(ROOT / ".venv" / "bin" / "baton"), "lsp"],
        "baton.server.env": {"BATON_HOME": str(baton_home), "BATON_FAKE_SCRIPT": str(script)},
    }
    env = {"BATON_HOME": str(baton_home)}
    with code_server(tools, vsix, repo, tmp_path, settings, env, ARTIFACTS) as wb:
        steps = drive(
            "resolve.mjs",
            wb,
            tools,
            ARTIFACTS,
            300,
            BATON_E2E_INSTRUCTION=INSTRUCTION,
            BATON_E2E_FILE="app.py",
        )
        log = "\n".join(
            f.read_text(errors="replace") for f in (wb.user_data / "logs").rglob("*Baton*.log")
        )
    by = {s["step"]: s for s in steps}
    assert "done" in by
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
    shots = sorted(p.name for p in ARTIFACTS.glob("*.png"))
    assert not any("FAILED" in s for s in shots), shots
