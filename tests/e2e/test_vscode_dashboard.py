""" "Baton: Open Dashboard" in real VS Code (code-server, headless Chromium, the built .vsix
and the real ``baton lsp``; the harness of test_vscode.py): after a task is delegated and is
ready for review, the command asks the server for a one-time link (``baton.dashboard``)
and opens the broker's dashboard page in a webview panel, framed from its loopback origin;
inside it the page is live (its socket open) and shows the task: its worker's lane, its row
with the broker's token counts, its transcript and its diff, read-only (no action offered:
the user's config leaves the page's actions off). The clicking is
clients/vscode/test/e2e/dashboard.mjs; screenshots go to artifacts/vscode-dashboard/.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
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

ARTIFACTS = ROOT / "artifacts" / "vscode-dashboard"
INSTRUCTION = "Make the first function return ten"
SCRIPT = {
    "steps": [
        {"say": "looking at app.py\n"},
        {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
        {"usage": {"input": 1234, "cached": 56, "output": 78}},
    ],
    "summary": "The first function returns ten.",
}


def test_open_dashboard_shows_the_brokers_page_in_a_panel(
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
            "dashboard.mjs",
            wb,
            tools,
            ARTIFACTS,
            300,
            BATON_E2E_FILE="app.py",
            BATON_E2E_INSTRUCTION=INSTRUCTION,
        )
    by = {s["step"]: s for s in steps}
    assert "done" in by
    assert "1 ready for review" in by["task-delegated"]["status"]
    opened = by["dashboard-opened"]
    # The panel frames the page itself, on the broker's loopback origin: the one-time link
    # was exchanged for the session (no token left in the URL) and the live socket is open.
    assert opened["frameUrl"].startswith("http://127.0.0.1:"), opened["frameUrl"]
    assert opened["frameUrl"].endswith("/dashboard/"), opened["frameUrl"]
    assert "Baton Dashboard" in opened["tab"]
    assert opened["live"] == "live"
    assert opened["lanes"] == ["fake"]
    listed = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "baton"), "tasks", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "BATON_HOME": str(baton_home)},
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    (task,) = json.loads(listed.stdout)
    assert opened["tasks"] == [{"id": task["id"], "state": "review"}]
    assert opened["workers"] == [{"worker": "fake", "input": "1234", "output": "78"}]
    picked = by["task-picked"]
    assert "looking at app.py" in picked["transcript"] and picked["hunks"] == 1
    assert picked["buttons"] == 0  # read-only: the user's config did not turn actions on
    shots = sorted(p.name for p in ARTIFACTS.glob("*.png"))
    assert len(shots) == 4 and not any("FAILED" in s for s in shots), shots
