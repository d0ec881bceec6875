"""Verified results in the editor: review findings arrive as diagnostics on the proposed
lines; a compare of three workers, accepting one, cleans up the others."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from lsprotocol import types

from baton.surfaces.lsp.documents import path_to_uri
from tests.conftest import fake_script, git
from tests.e2e.lsp_support import EDITORS, Session, start, stop, wait_for

APP = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
EDIT = {"edit": "app.py", "old": "    return 2\n", "new": "    x = 2\n    return x * 10\n"}


def configure(repo: Path, tmp_path: Path) -> None:
    """A project whose reviewer is a second (fake) worker with a finding on line 6."""
    verdict = {
        "verdict": "request_changes",
        "summary": "needs a name",
        "findings": [
            {"path": "app.py", "line": 6, "severity": "error", "message": "x is a poor name"}
        ],
    }
    script = tmp_path / "critic.json"
    script.write_text(json.dumps({"steps": [{"say": json.dumps(verdict)}]}))
    for name in ("critic", "alt1", "alt2"):
        extra = f'options = {{ script = "{script}" }}\n' if name == "critic" else ""
        with (repo / ".baton.toml").open("a") as f:
            f.write(f'[profiles.{name}]\nprovider = "fake"\n{extra}\n')
    git(repo, "add", ".baton.toml")
    git(repo, "commit", "-qm", "baton config")


@pytest.fixture(params=EDITORS)
async def lsp(
    request: pytest.FixtureRequest, repo: Path, baton_home: Path, tmp_path: Path
) -> AsyncIterator[Session]:
    configure(repo, tmp_path)
    session = await start(request.param, repo, baton_home)
    yield session
    await stop(session)


def selection() -> dict[str, object]:
    return {"start": {"line": 0, "character": 0}, "end": {"line": 5, "character": 0}}


async def test_review_findings_are_diagnostics_on_the_proposed_lines(
    lsp: Session, repo: Path
) -> None:
    (repo / ".baton.toml").write_text(
        (repo / ".baton.toml").read_text() + '[review]\nworker = "critic"\n'
    )
    doc = lsp.open("app.py", APP)
    result = await lsp.command(
        "baton.delegate",
        {
            "uri": doc.uri,
            "range": selection(),
            "kind": "delegate",
            "instruction": fake_script(EDIT),
        },
    )
    task_id = result["taskId"]
    assert await lsp.settle(task_id) == "review"
    uri = path_to_uri(repo / "app.py")
    diags = await wait_for(lambda: lsp.client.diagnostics.get(uri), what="review diagnostics")
    (d,) = diags
    assert d.source == "baton review" and d.severity == types.DiagnosticSeverity.Error
    assert "x is a poor name" in d.message and "critic" in d.message
    # Proposed line 6 ("    x = 2") is in the hunk that replaces "    return 2" (0-based 5).
    assert d.range.start.line == 5 and d.range.end.line == 6
    info = await lsp.command("baton.inspect", {"taskId": task_id})
    assert "review by critic" in json.dumps(info)
    # Once the task leaves review, its findings go away.
    await lsp.command("baton.reject", {"taskId": task_id})
    assert await lsp.settle(task_id, "rejected") == "rejected"
    await wait_for(lambda: len(lsp.client.diagnostics[uri]) == 0, what="cleared diagnostics")


async def test_compare_three_workers_accept_one_the_others_are_cleaned_up(
    lsp: Session, repo: Path
) -> None:
    doc = lsp.open("app.py", APP)
    result = await lsp.command(
        "baton.delegate",
        {
            "uri": doc.uri,
            "range": selection(),
            "kind": "delegate",
            "workers": ["fake", "alt1", "alt2"],
            "instruction": fake_script(EDIT),
        },
    )
    ids = result["taskIds"]
    assert len(ids) == 3 and result["group"] and result["taskId"] == ids[0]
    for tid in ids:
        assert await lsp.settle(tid) == "review"
    await lsp.command("baton.accept", {"taskId": ids[0]})
    assert await lsp.settle(ids[0], "applied") == "applied"
    for tid in ids[1:]:
        assert await lsp.settle(tid, "rejected") == "rejected"
