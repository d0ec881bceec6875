"""Claude Code in a terminal shows its edits in the editor through Baton.

The real `baton lsp` (with Neovim's recorded capabilities) runs its Claude Code IDE server;
the REAL Claude Code CLI runs interactively in tmux (print mode never connects to an IDE),
offline against the scripted model server, and finds the server through the lock file the
language server wrote. Claude's proposed edit becomes a Baton task in review; the editor
decides it hunk by hunk with the usual commands; Claude Code writes what was accepted.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.lsp_support import Session, start, stop, wait_for
from tests.e2e.test_claude_ide import BOOT, STEP, tool_results
from tests.e2e.test_worker_claude import require
from tests.support.claude_tui import ClaudeTui, require_tmux, seed_claude_config, tui_launch
from tests.support.modelserver import Answer, DenyAllProxy, ModelServer, Script, ToolCall

pytestmark = pytest.mark.agents

OLD = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
NEW = "def a():\n    return 10\n\n\ndef b():\n    return 20\n"


@dataclass
class Rig:
    lsp: Session
    srv: ModelServer
    tui: ClaudeTui

    @property
    def shown(self) -> list[str]:
        """What the server asked the editor to show (``window/showDocument``)."""
        return [p.uri for p in self.lsp.client.shown_documents]

    async def proposal(self) -> dict[str, Any]:
        """The task Claude Code's proposal became, once it is in review."""

        async def find() -> dict[str, Any] | None:
            result = await self.lsp.command("baton.tasks", {"states": ["review"]})
            found = [t for t in result["tasks"] if t["worker"] == "claude-code"]
            return found[0] if found else None

        deadline = time.monotonic() + 3 * STEP  # a loaded machine: generous, by the clock
        while time.monotonic() < deadline:
            task = await find()
            if task is not None:
                return task
            await asyncio.sleep(0.1)
        raise AssertionError(f"no proposal in review; the terminal shows:\n{self.tui.screen(200)}")


def ide_port(config_dir: Path) -> int:
    locks = list((config_dir / "ide").glob("*.lock"))
    assert len(locks) == 1, locks
    lock = json.loads(locks[0].read_text())
    assert lock["ideName"].startswith("Baton") and lock["transport"] == "ws"
    return int(locks[0].stem)


@asynccontextmanager
async def rig(repo: Path, home: Path, tmp_path: Path, script: Script) -> AsyncIterator[Rig]:
    require("claude")
    require_tmux()
    cfg = Path(os.environ["CLAUDE_CONFIG_DIR"])  # where the language server writes its lock
    seed_claude_config(cfg, repo)
    lsp = await start("neovim", repo, home)
    try:
        await lsp.status()  # the broker (and with it the IDE server) is up
        port = await wait_for(lambda: (cfg / "ide").is_dir() and ide_port(cfg), what="lock file")
        with DenyAllProxy() as proxy, ModelServer(script) as srv:
            launch = tui_launch(srv, tmp_path / "home", cfg, ide_port=port, proxy=proxy.url)
            with ClaudeTui(launch, repo) as tui:
                await tui.until("for shortcuts", BOOT)
                yield Rig(lsp, srv, tui)
            assert proxy.attempts == []
    finally:
        await stop(lsp)
    assert not list((cfg / "ide").glob("*.lock")), "the lock file outlived the server"


def edit_script(repo: Path, then: str) -> Script:
    # One Edit spanning both functions: two hunks for the editor. (With Write, Claude Code
    # 2.1.197 drops the final newline of the contents an IDE saves: see the closing note.)
    return Script.of(
        ToolCall(("Read",), {"file_path": str(repo / "app.py")}),
        ToolCall(
            ("Edit",),
            {
                "file_path": str(repo / "app.py"),
                "old_string": "return 1\n\n\ndef b():\n    return 2",
                "new_string": "return 10\n\n\ndef b():\n    return 20",
            },
        ),
        Answer(then),
    )


async def test_decided_hunk_by_hunk_in_the_editor_then_written_by_claude(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    async with rig(repo, baton_home, tmp_path, edit_script(repo, "Kept what you chose.")) as r:
        r.lsp.open("app.py")
        r.tui.submit("Make a() and b() return ten times more")
        task = await r.proposal()
        assert task["title"] == "Claude Code: edit app.py"
        diff = await r.lsp.command("baton.diff", {"taskId": task["id"]})
        hunks = [h["id"] for f in diff["files"] for h in f["hunks"]]
        assert len(hunks) == 2
        assert r.shown == [r.lsp.uri("app.py")]  # the editor brought the file into view
        accepted = await r.lsp.command("baton.accept", {"taskId": task["id"], "hunkIds": hunks[:1]})
        assert accepted["applied"] == hunks[:1] and accepted["state"] == "review"
        assert r.lsp.rec.edits == []  # Baton writes nothing: Claude Code will
        assert (repo / "app.py").read_text() == OLD
        rejected = await r.lsp.command("baton.reject", {"taskId": task["id"], "hunkIds": hunks[1:]})
        assert rejected["state"] == "applied"
        await r.tui.until("Kept what you chose.", STEP)
        results = tool_results(r.srv.main_requests[-1])
        assert any("The user modified your proposed" in t for t in results), results
    assert (repo / "app.py").read_text() == OLD.replace("return 1\n", "return 10\n")


async def test_answered_in_the_terminal_withdraws_the_proposal(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    async with rig(repo, baton_home, tmp_path, edit_script(repo, "Done.")) as r:
        r.tui.submit("Make a() and b() return ten times more")
        task = await r.proposal()
        await r.tui.until(re.compile(r"Do you want to (make this edit to|overwrite|create)"), STEP)
        r.tui.press("Enter")  # "1. Yes", the default
        state = await r.lsp.settle(task["id"], "cancelled", timeout=STEP)
        assert state == "cancelled"
        inspected = await r.lsp.command("baton.inspect", {"taskId": task["id"], "events": 0})
        assert inspected["task"]["message"] == "answered in the Claude Code terminal"
        await r.tui.until("Done.", STEP)
    assert (repo / "app.py").read_text() == NEW


async def test_unsaved_edits_keep_the_diff_in_the_terminal(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    async with rig(repo, baton_home, tmp_path, edit_script(repo, "Done.")) as r:
        doc = r.lsp.open("app.py")
        r.lsp.change(doc, "# typing\n" + OLD)  # unsaved in the editor
        r.tui.submit("Make a() and b() return ten times more")
        await r.tui.until(re.compile(r"Do you want to (make this edit to|overwrite)"), STEP)
        tasks = await r.lsp.command("baton.tasks", {})
        assert [t for t in tasks["tasks"] if t["worker"] == "claude-code"] == []
        r.tui.press("Escape")
