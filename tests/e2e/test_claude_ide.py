"""Baton's IDE server with the REAL Claude Code CLI: interactive, in a tmux pane (print mode
never connects to an IDE), offline against the scripted model server, with a scripted host.

Each test: a fresh HOME and CLAUDE_CONFIG_DIR (first-run dialogs pre-answered), our server's
lock file there, CLAUDE_CODE_SSE_PORT set to its port, a deny-all proxy that must see nothing.
The CLI comes from `scripts/install-agents` (as tmux does); when either is missing the tests
are skipped LOUDLY.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from baton.surfaces.ide import (
    DiffDecision,
    DiffRequest,
    DiffUnavailable,
    IdeServer,
    start_ide_server,
)
from tests.e2e.test_worker_claude import require
from tests.support.claude_tui import (
    ClaudeTui,
    require_tmux,
    seed_claude_config,
    transcript,
    tui_launch,
)
from tests.support.ide_host import Policy, RecordingHost
from tests.support.modelserver import (
    Answer,
    DenyAllProxy,
    ModelServer,
    RecordedRequest,
    Script,
    ToolCall,
)

pytestmark = pytest.mark.agents

BOOT = 30.0  # seconds for the CLI to start and connect (2-6 s seen)
STEP = 20.0  # seconds for one model round trip and its tool
SETTLE = 0.5  # the CLI registers the IDE a moment after it fetched the tool list


@dataclass
class Rig:
    srv: ModelServer
    proxy: DenyAllProxy
    server: IdeServer
    host: RecordingHost
    tui: ClaudeTui
    ws: Path
    cfg: Path

    async def main_requests(self, count: int, timeout: float = STEP) -> list[RecordedRequest]:
        deadline = time.monotonic() + timeout
        while len(self.srv.main_requests) < count:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{len(self.srv.main_requests)} model requests, wanted {count}; "
                    f"the terminal shows:\n{self.tui.screen(200)}"
                )
            await asyncio.sleep(0.1)
        return self.srv.main_requests

    async def diff_request(self, count: int = 1, timeout: float = STEP) -> DiffRequest:
        """The `count`-th openDiff the host received (the terminal is shown if none came)."""
        try:
            return await self.host.next_request(count, timeout)
        except TimeoutError:
            asked = [(q.kind, q.outcome) for q in self.srv.requests]
            raise AssertionError(
                f"no openDiff came; model requests {asked}; the terminal shows:\n"
                f"{self.tui.screen(200)}"
            ) from None

    async def closed_by(self, tab_name: str, timeout: float = STEP) -> str:
        """How the host was told the tab closed (the terminal is shown if it was not)."""
        try:
            return await self.host.closed_by(tab_name, timeout)
        except TimeoutError:
            raise AssertionError(
                f"the tab was never closed; the host saw {self.host.closed_tabs}; "
                f"the terminal shows:\n{self.tui.screen(200)}"
            ) from None

    async def tool_uses(self, kind: str, timeout: float = 5.0) -> list[dict[str, Any]]:
        """The transcript's tool results of `kind` ("create", "update"), once there is one
        (the CLI writes its transcript a moment after the screen shows the result)."""
        deadline = time.monotonic() + timeout
        while True:
            uses = [e.get("toolUseResult") for e in transcript(self.cfg)]
            found = [u for u in uses if isinstance(u, dict) and u.get("type") == kind]
            if found or time.monotonic() > deadline:
                return found
            await asyncio.sleep(0.1)

    def only_local(self) -> None:
        assert self.proxy.attempts == [], f"call-home attempts: {self.proxy.attempts}"
        assert self.srv.errors == []


@asynccontextmanager
async def rig(tmp_path: Path, script: Script, policy: Policy | None) -> AsyncIterator[Rig]:
    require("claude")
    require_tmux()
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    cfg = tmp_path / "home" / ".claude"
    seed_claude_config(cfg, ws)
    host = RecordingHost(policy)
    with DenyAllProxy() as proxy, ModelServer(script) as srv:
        server = await start_ide_server(host, [ws], config_dir=cfg)
        try:
            launch = tui_launch(srv, tmp_path / "home", cfg, ide_port=server.port, proxy=proxy.url)
            with ClaudeTui(launch, ws) as tui:
                try:
                    client = await server.wait_for_client(BOOT)
                except TimeoutError:
                    raise AssertionError(
                        f"the CLI never connected; it shows:\n{tui.screen(200)}"
                    ) from None
                assert client.name == "claude-code" and client.pid is not None
                await tui.until("for shortcuts", BOOT)
                await asyncio.sleep(SETTLE)
                yield Rig(srv, proxy, server, host, tui, ws, cfg)
        finally:
            await server.close()


def tool_results(request: RecordedRequest) -> list[str]:
    """The text of every tool_result the CLI sent back to the model in one request."""
    out: list[str] = []
    for message in request.body.get("messages", []):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                out.append(inner if isinstance(inner, str) else json.dumps(inner))
    return out


async def test_write_accepted_with_the_editors_changes(tmp_path: Path) -> None:
    target = tmp_path / "ws" / "new.txt"
    script = Script.of(
        ToolCall(("Write",), {"file_path": str(target), "content": "written by the model\n"}),
        Answer("Created new.txt."),
    )

    def accept_edited(request: DiffRequest) -> DiffDecision:
        return DiffDecision.accept(request.new_file_contents + "added in the editor\n")

    async with rig(tmp_path, script, accept_edited) as r:
        r.tui.submit("Create new.txt")
        request = await r.diff_request()
        assert request.is_new_file and request.old_contents is None
        assert request.new_file_path == request.old_file_path == str(target)
        assert request.new_file_contents == "written by the model\n"
        assert "new.txt" in request.tab_name and request.client_pid is not None
        # The CLI writes what the editor saved, then closes the tab.
        assert await r.closed_by(request.tab_name) == "cli"
        requests = await r.main_requests(2)
        await r.tui.until("Created new.txt.", STEP)
        created = await r.tool_uses("create")
    assert [u.get("userModified") for u in created] == [True]
    # The CLI drops the final newline of a created file (not ours: same when accepted as is).
    assert target.read_text() == "written by the model\nadded in the editor"
    results = tool_results(requests[1])
    assert any("The user modified your proposed content before accepting it" in t for t in results)
    assert r.host.cancelled == [] and r.server.tabs == {}
    r.only_local()


async def test_edit_rejected_in_the_editor(tmp_path: Path) -> None:
    source = tmp_path / "ws" / "app.py"
    original = "def a():\n    return 1\n"
    script = Script.of(
        ToolCall(("Read",), {"file_path": str(source)}),
        ToolCall(
            ("Edit",),
            {"file_path": str(source), "old_string": "return 1", "new_string": "return 2"},
        ),
        Answer("never asked: a rejected edit ends the turn"),
    )
    (tmp_path / "ws").mkdir()
    source.write_text(original)
    async with rig(tmp_path, script, lambda _: DiffDecision.reject()) as r:
        r.tui.submit("Make a() return 2")
        request = await r.diff_request(timeout=2 * STEP)
        assert not request.is_new_file and request.old_contents == original
        assert request.new_file_contents == "def a():\n    return 2\n"
        assert await r.closed_by(request.tab_name) == "cli"
        await r.tui.until(re.compile(r"User rejected \w+ to app\.py"), STEP)
        await asyncio.sleep(1.0)  # a request after the rejection would come now
        assert len(r.srv.main_requests) == 2, [q.outcome for q in r.srv.main_requests]
    assert source.read_text() == original
    r.only_local()


async def test_decided_in_the_terminal_first(tmp_path: Path) -> None:
    target = tmp_path / "ws" / "new.txt"
    script = Script.of(
        ToolCall(("Write",), {"file_path": str(target), "content": "typed yes\n"}),
        Answer("Done."),
    )
    async with rig(tmp_path, script, None) as r:  # the host never decides
        r.tui.submit("Create new.txt")
        request = await r.diff_request()
        await r.tui.until("Do you want to create new.txt?", STEP)
        assert r.server.tabs == {request.tab_name: True}
        r.tui.type("1")  # "Yes" in the terminal's own dialog
        assert await r.closed_by(request.tab_name) == "cli"
        await r.host.until(lambda: r.host.cancelled == [request.tab_name])
        await r.main_requests(2)
        await r.tui.until("Done.", STEP)
    assert target.read_text() == "typed yes\n"  # the terminal's write keeps the newline
    assert r.host.pending() == [] and r.server.tabs == {}
    assert r.host.closed_tabs == [(request.tab_name, "cli")]
    r.only_local()


async def test_a_diff_the_editor_cannot_show_stays_in_the_terminal(tmp_path: Path) -> None:
    target = tmp_path / "ws" / "new.txt"
    script = Script.of(
        ToolCall(("Write",), {"file_path": str(target), "content": "from the terminal\n"}),
        Answer("Done."),
    )

    def refuse(request: DiffRequest) -> DiffUnavailable:
        return DiffUnavailable("new.txt has unsaved changes in the editor")

    async with rig(tmp_path, script, refuse) as r:
        r.tui.submit("Create new.txt")
        request = await r.diff_request()
        # The CLI got a tool error: it closes the tab at once and its own dialog decides.
        assert await r.closed_by(request.tab_name) == "cli"
        await r.tui.until("Do you want to create new.txt?", STEP)
        assert not target.exists() and r.server.tabs == {}
        r.tui.type("1")
        await r.tui.until("Done.", STEP)
    assert target.read_text() == "from the terminal\n"
    assert r.host.cancelled == []
    r.only_local()
