"""The worker picker in real VS Code (code-server, headless Chromium, the built .vsix and the
real ``baton lsp``; the harness of vscode_support): "Delegate with Options" lists the
profiles of the user's Baton config as the server resolved them — each with its provider and
model, the default marked, why one cannot run — and none the user did not configure; the
task runs on the worker picked. The clicking is clients/vscode/test/e2e/workers.mjs;
screenshots go to artifacts/vscode-workers/.
"""

from __future__ import annotations

import pytest

from tests.conftest import user_config
from tests.e2e.vscode_support.workbench import ROOT, VSCode

pytestmark = pytest.mark.slow

ARTIFACTS = ROOT / "artifacts" / "vscode-workers"
INSTRUCTION = "Make the first function return ten"
SCRIPT = {
    "steps": [{"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"}],
    "summary": "The first function returns ten.",
}


def test_the_worker_picker_lists_the_users_profiles_from_the_server(vscode: VSCode) -> None:
    missing = vscode.tmp / "no-such-claude"  # never installed, whatever this machine has
    user_config(
        vscode.tmp,
        'default_worker = "quick"\n'
        "[profiles.quick]\n"
        'provider = "fake"\nmodel = "m-small"\nlabel = "Quick fake"\n'
        "[profiles.claude-work]\n"
        f'provider = "claude"\nmodel = "claude-sonnet-4-5"\nbinary = "{missing}"\n',
    )
    run = vscode.run(
        "workers.mjs",
        ARTIFACTS,
        240,
        vscode.settings(SCRIPT),
        BATON_E2E_PICK="quick",
        instruction=INSTRUCTION,
    )
    by, log = run.by, run.log
    rows = {r["label"]: r for r in by["worker-picker"]["rows"]}
    # The user's profiles, as the server resolved them; not the old static list's.
    assert {"(default)", "quick", "claude-work", "fake"} <= set(rows), rows
    assert not {"codex", "opencode", "gemini", "pi"} & set(rows), rows
    assert "the server's default: quick" in rows["(default)"]["text"], rows["(default)"]
    quick = rows["quick"]
    assert "fake · m-small · default" in quick["text"] and "Quick fake" in quick["text"], quick
    assert quick["icon"], quick  # it can run
    work = rows["claude-work"]
    assert "claude · claude-sonnet-4-5" in work["text"], work
    assert f"cannot run: {missing} not installed" in work["text"] and not work["icon"], work
    # The task ran on the worker picked.
    assert "1 ready for review" in by["ready-for-review"]["status"]
    assert "started (quick)" in log, log[-3000:]
    run.assert_screenshots(5)
