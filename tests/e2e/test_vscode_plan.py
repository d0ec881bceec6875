"""The "Baton: Plan…" command in real VS Code (code-server, headless Chromium, the built
.vsix and the real ``baton lsp``; the harness of test_vscode.py) with the fake agent as the
project's planner (issue 21): the goal typed in the input box, a progress while the planner
works, the proposal shown as a document listing every node with its worker, prerequisites
and scope, Approve runs it as a graph and its tasks appear in the task view. The clicking is
clients/vscode/test/e2e/plan.mjs; screenshots go to artifacts/vscode-plan/.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_cli import as_json, baton, stop_brokers
from tests.e2e.test_cli_plan import PLAN
from tests.e2e.test_neovim_plan import project
from tests.e2e.test_vscode import (  # noqa: F401 (the fixtures tools and vsix)
    BASE_SETTINGS,
    ROOT,
    Tools,
    code_server,
    drive,
    tools,
    vsix,
)

pytestmark = pytest.mark.slow

ARTIFACTS = ROOT / "artifacts" / "vscode-plan"
GOAL = "Split the work in three"


@pytest.fixture(autouse=True)
def _stop_brokers(baton_home: Path, tmp_path: Path) -> Iterator[None]:
    yield
    stop_brokers(tmp_path / "run" / "baton")


def test_plan_approve_runs_the_graph(
    tools: Tools,  # noqa: F811
    vsix: Path,  # noqa: F811
    repo: Path,
    baton_home: Path,
    tmp_path: Path,
) -> None:
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    answer = f"The plan:\n```json\n{json.dumps(PLAN)}\n```\n"
    # The planner takes a moment, so the progress can be seen.
    project(repo, tmp_path, {"steps": [{"say": "reading"}, {"sleep": 3.0}], "summary": answer})
    settings = {
        **BASE_SETTINGS,
        "baton.server.path": [str(ROOT / ".venv" / "bin" / "baton"), "lsp"],
        "baton.server.env": {"BATON_HOME": str(baton_home)},
    }
    env = {"BATON_HOME": str(baton_home)}
    with code_server(tools, vsix, repo, tmp_path, settings, env, ARTIFACTS) as wb:
        steps = drive("plan.mjs", wb, tools, ARTIFACTS, 300, BATON_E2E_GOAL=GOAL)
    by = {s["step"]: s for s in steps}
    assert "done" in by
    assert any(f'planning "{GOAL}"' in t for t in by["planning"]["toasts"])
    shown = by["plan-shown"]
    text = shown["text"]
    assert text.startswith(f"# Plan: {GOAL}") and "3 tasks, checked" in text, text
    assert text.index("## left: Create left/a.txt") < text.index("## join: Write join.txt")
    assert "**after:** left, right" in text and "**scope:** `right/**`" in text, text
    assert "**worker:** doer" in text and "**scope:** anywhere" in text, text
    assert shown["progressGone"] is True
    assert {"Approve Plan", "Reject Plan"} <= set(shown["actions"]), shown["actions"]
    assert any("3 tasks started" in t for t in by["approved"]["toasts"])
    assert "2 ready for review" in by["tasks-in-view"]["status"]
    # The store has the planner and the graph's three tasks; the join waits for the others.
    tasks = as_json(baton("tasks", "--json"))
    by_title = {t["title"]: t for t in tasks}
    assert len(tasks) == 4, tasks
    assert by_title[f"plan: {GOAL}"]["state"] == "answered"
    assert by_title["Write join.txt"]["state"] == "queued"
    shots = sorted(p.name for p in ARTIFACTS.glob("*.png"))
    assert len(shots) == 6 and not any("FAILED" in s for s in shots), shots
