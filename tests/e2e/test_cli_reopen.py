"""`baton reopen`: accepted hunks the user reverted in the file go back up for review.

The editor clients send this decision on an undo; from a terminal, a user who reverted an
applied change by hand (``git checkout -- app.py``) names the hunks. Only the hunks whose
place holds their old lines again are reopened; Baton writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import fake_script, git
from tests.e2e.test_cli import EDITS, as_json, baton, stop_brokers

APP = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"


@pytest.fixture(autouse=True)
def _stop_brokers(baton_home: Path, tmp_path: Path) -> Iterator[None]:
    yield
    stop_brokers(tmp_path / "run" / "baton")


def test_reverted_by_hand_then_reopened_then_accepted_again(baton_home: Path, repo: Path) -> None:
    run = baton("run", "--json", "--cwd", str(repo), fake_script(*EDITS))
    assert run.returncode == 0, run.stderr
    out = as_json(run)
    tid = out["task"]["id"]
    hunks = [h["id"] for f in out["diff"]["files"] for h in f["hunks"]]
    assert as_json(baton("accept", "--json", tid))["task"]["state"] == "applied"

    still = baton("reopen", tid, *hunks)  # the file still has the change: nothing to reopen
    assert still.returncode == 1 and "still holds its new lines" in still.stdout, still.stdout
    git(repo, "checkout", "--", "app.py")  # the user reverts the change by hand
    assert (repo / "app.py").read_text() == APP

    reopened = baton("reopen", "--json", tid, *hunks)
    assert reopened.returncode == 0, reopened.stderr
    doc = as_json(reopened)
    assert sorted(doc["reopened"]) == sorted(hunks) and doc["kept"] == []
    assert doc["task"]["state"] == "review"
    assert (repo / "app.py").read_text() == APP, "a reopen must write nothing"
    human = baton("diff", tid)
    assert human.returncode == 0 and "+    return 10" in human.stdout

    again = as_json(baton("accept", "--json", tid, hunks[0]))
    assert again["applied"] == [hunks[0]] and again["task"]["state"] == "review"
    assert "return 10" in (repo / "app.py").read_text()
    missing = baton("reopen", tid)
    assert missing.returncode == 2 and "HUNK" in missing.stderr
