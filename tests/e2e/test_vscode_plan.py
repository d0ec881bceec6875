"""The "Baton: Plan…" command in real VS Code (code-server, headless Chromium, the built
.vsix and the real ``baton lsp``; the harness of vscode_support) with the fake agent as the
project's planner (issue 21): the goal typed in the input box, a progress while the planner
works, the proposal shown as a document listing every node with its worker, prerequisites
and scope, Approve runs it as a graph and its tasks appear in the task view. The clicking is
clients/vscode/test/e2e/plan.mjs; screenshots go to artifacts/vscode-plan/.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_cli import as_json, baton, stop_brokers
from tests.e2e.test_cli_plan import PLAN
from tests.e2e.test_neovim_plan import project
from tests.e2e.vscode_support.workbench import ROOT, VSCode

pytestmark = pytest.mark.slow

ARTIFACTS = ROOT / "artifacts" / "vscode-plan"
GOAL = "Split the work in three"


@pytest.fixture(autouse=True)
def _stop_brokers(baton_home: Path, tmp_path: Path) -> Iterator[None]:
    yield
    stop_brokers(tmp_path / "run" / "baton")


def test_plan_approve_runs_the_graph(vscode: VSCode) -> None:
    answer = f"The plan:\n```json\n{json.dumps(PLAN)}\n```\n"
    # The planner takes a moment, so the progress can be seen.
    planner = {"steps": [{"say": "reading"}, {"sleep": 3.0}], "summary": answer}
    project(vscode.repo, vscode.tmp, planner)
    run = vscode.run("plan.mjs", ARTIFACTS, 300, vscode.settings(), BATON_E2E_GOAL=GOAL)
    by = run.by
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
    run.assert_screenshots(6)
