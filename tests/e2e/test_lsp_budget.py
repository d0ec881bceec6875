"""A daily budget's alert reaches the editor (issue 19): the language server shows it with
``window/showMessage`` (a warning, which VS Code and Neovim show), once; a budget's stop of
the editor's own task is said too, and ``baton.retry`` with a raised cap continues it. Each
test runs with Neovim's and VS Code's capabilities."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.conftest import fake_script
from tests.e2e.lsp_support import EDITORS, Session, start, stop, wait_for


@pytest.fixture(params=EDITORS)
async def lsp(
    request: pytest.FixtureRequest, repo: Path, baton_home: Path
) -> AsyncIterator[Session]:
    (repo / ".baton.toml").write_text("[budget]\nday_tokens = 1000\ntask_steps = 1\n")
    session = await start(request.param, repo, baton_home)
    yield session
    await stop(session)


async def delegate(lsp: Session, *steps: dict[str, Any]) -> str:
    args = {"uri": lsp.uri("app.py"), "kind": "delegate", "instruction": fake_script(*steps)}
    result = await lsp.command("baton.delegate", args)
    return str(result["taskId"])


def budget_messages(lsp: Session) -> list[types.ShowMessageParams]:
    return [m for m in lsp.client.messages if "budget" in m.message]


async def test_a_daily_budget_alert_and_a_stop_show_in_the_editor(lsp: Session) -> None:
    first = await delegate(lsp, {"usage": {"input": 800, "output": 10}})
    assert await lsp.settle(first) == "answered"
    (alert,) = await wait_for(lambda: budget_messages(lsp), what="the 80 % alert")
    assert alert.type == types.MessageType.Warning
    assert "daily tokens at 80 %" in alert.message and "810 tokens of 1000 tokens" in alert.message

    second = await delegate(
        lsp,
        {"usage": {"input": 10, "output": 0}},
        {"write": "a.txt", "content": "a\n"},
        {"write": "b.txt", "content": "b\n"},  # the second tool call: past task_steps = 1
        {"sleep": 5},
    )
    assert await lsp.settle(second) == "review"
    stop_said = await wait_for(
        lambda: [m for m in budget_messages(lsp) if "steps cap reached" in m.message],
        what="the stop",
    )
    assert second in stop_said[0].message
    assert [m for m in budget_messages(lsp) if "at 80 %" in m.message] == [alert]  # once

    # baton.retry with a raised cap continues it (the same session, to its end).
    moved = await lsp.command("baton.retry", {"taskId": second, "maxSteps": 5})
    assert moved["state"] == "running"
    assert await lsp.settle(second, "review") == "review"
    inspected = await lsp.command("baton.inspect", {"taskId": second, "events": 0})
    assert inspected["task"]["completion"] == "completed", inspected["task"]
