""" "Baton: Open Dashboard" in real VS Code (code-server, headless Chromium, the built .vsix
and the real ``baton lsp``; the harness of vscode_support): after a task is delegated and is
ready for review, the command asks the server for a one-time link (``baton.dashboard``)
and opens the broker's dashboard page in a webview panel, framed from its loopback origin;
inside it the page is live (its socket open) and shows the task: its worker's lane, its row
with the broker's token counts, its transcript and its diff, read-only (no action offered:
the user's config leaves the page's actions off); its CSV export downloads. The page holds a
framed session (no cookie, nothing stored, no token left in its address), so it works
whether code-server is opened at ``127.0.0.1`` (the page's own site) or at ``localhost``
(another site: the case of desktop VS Code's ``vscode-webview://`` panels, where the browser
tab's SameSite=Strict cookie would never reach the page). The clicking is
clients/vscode/test/e2e/dashboard.mjs; screenshots go to artifacts/vscode-dashboard/ and
artifacts/vscode-dashboard-localhost/.
"""

from __future__ import annotations

import pytest

from tests.e2e.vscode_support.workbench import BATON, ROOT, VSCode

pytestmark = pytest.mark.slow

ARTIFACTS = {
    "127.0.0.1": ROOT / "artifacts" / "vscode-dashboard",
    "localhost": ROOT / "artifacts" / "vscode-dashboard-localhost",
}
INSTRUCTION = "Make the first function return ten"
SCRIPT = {
    "steps": [
        {"say": "looking at app.py\n"},
        {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
        {"usage": {"input": 1234, "cached": 56, "output": 78}},
    ],
    "summary": "The first function returns ten.",
}


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_open_dashboard_shows_the_brokers_page_in_a_panel(vscode: VSCode, host: str) -> None:
    run = vscode.run(
        "dashboard.mjs",
        ARTIFACTS[host],
        300,
        vscode.settings(SCRIPT),
        host=host,
        instruction=INSTRUCTION,
        BATON_E2E_BATON=str(BATON),
        BATON_E2E_REPO=str(vscode.repo),
    )
    assert run.workbench.url.startswith(f"http://{host}:")
    by = run.by
    assert "1 ready for review" in by["task-delegated"]["status"]
    opened = by["dashboard-opened"]
    # The panel frames the page itself, on the broker's loopback origin: the one-time link
    # was exchanged for the session (no token left in the URL) and the live socket is open.
    assert opened["frameUrl"].startswith("http://127.0.0.1:"), opened["frameUrl"]
    assert opened["frameUrl"].endswith("/dashboard/"), opened["frameUrl"]
    assert opened["panelOrigin"].startswith(f"http://{host}:"), opened["panelOrigin"]
    # Its session is the framed one: in the page's memory, nowhere else.
    assert not [c for c in opened["cookies"] if c.startswith("baton")], opened["cookies"]
    assert opened["stored"] in (0, "denied") and opened["sessionInDom"] is False
    assert "Baton Dashboard" in opened["tab"]
    assert opened["live"] == "live"
    assert opened["lanes"] == ["fake"]
    pushed = by["task-pushed"]
    (task,) = [t for t in vscode.tasks() if t["id"] != pushed["id"]]
    assert opened["tasks"] == [{"id": task["id"], "state": "review"}]
    assert opened["workers"] == [{"worker": "fake", "input": "1234", "output": "78"}]
    picked = by["task-picked"]
    assert "looking at app.py" in picked["transcript"] and picked["hunks"] == 1
    assert picked["buttons"] == 0  # read-only: the user's config did not turn actions on
    exported = by["csv-downloaded"]
    assert exported["name"] == "baton-tasks-24h.csv" and exported["title"] is None
    assert exported["header"].startswith("id,title,worker,provider,model,state,")
    assert [row.split(",")[0] for row in exported["rows"]] == [task["id"]]
    # A task delegated while the panel was open came over the live socket, not by a read.
    assert pushed["rows"] == 2 and pushed["snapshotsAfter"] == pushed["snapshotsBefore"] == 1
    run.assert_screenshots(6)
