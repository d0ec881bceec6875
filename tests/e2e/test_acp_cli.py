"""``baton inspect`` lists an ACP task's waiting permission request; ``baton answer`` answers it."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_acp_lsp import FAKE, project_config
from tests.e2e.test_cli import as_json, baton, stop_brokers
from tests.support.acp_fake_agent import script


@pytest.fixture(autouse=True)
def _stop_brokers(baton_home: Path, tmp_path: Path) -> Iterator[None]:
    yield
    stop_brokers(tmp_path / "run" / "baton")


def test_inspect_lists_the_request_and_answer_allows_it(baton_home: Path, repo: Path) -> None:
    project_config(
        repo,
        "acp",
        "fake",
        options={"transport": "acp", "acp_argv": [sys.executable, FAKE], "acp_idle_exit": 20},
    )
    steps = script({"run": ["touch", "ran.txt"]}, {"say": "ran it"})
    started = baton("delegate", "--json", "--worker", "acp", "--cwd", str(repo), steps)
    assert started.returncode == 0, started.stderr
    tid = as_json(started)["id"]
    deadline = time.monotonic() + 20
    while True:
        shown = baton("inspect", tid, cwd=repo)
        if "asks permission p1" in shown.stdout or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert "asks permission p1: touch ran.txt" in shown.stdout, shown.stdout + shown.stderr
    assert f"baton answer {tid} <option>" in shown.stdout
    assert "allow (allow_once), always (allow_always), reject (reject_once)" in shown.stdout
    wrong = baton("answer", tid, "maybe", cwd=repo)
    assert wrong.returncode != 0 and "unknown option 'maybe'" in (wrong.stdout + wrong.stderr)
    answered = baton("answer", tid, "allow", cwd=repo)
    assert answered.returncode == 0, answered.stderr
    assert f"task {tid}: answered p1 with Allow (allow_once)" in answered.stdout
    watched = baton("watch", tid, "--timeout", "20", cwd=repo)
    assert watched.returncode == 0, watched.stdout + watched.stderr
    final = as_json(baton("inspect", "--json", "--detail", "summary", tid, cwd=repo))
    assert final["state"] == "review" and "permissions" not in final
    assert final["detail"]["summary"] == "Ran touch ran.txt. ran it"
