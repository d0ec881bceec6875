"""ACP permission prompts and plans through ``baton lsp``, with the fake ACP agent.

A plain client answers the ``window/showMessageRequest``; a rich client (``permissionPrompts:
"inline"``) gets only ``baton/permission`` and answers with ``baton.answerPermission``. The
project's ``.baton.toml`` names the ACP profile, as a user's would.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import user_config
from tests.e2e.lsp_support import Session, start, stop, wait_for
from tests.support.acp_fake_agent import script

FAKE = str(Path(__file__).resolve().parents[1] / "support" / "acp_fake_agent.py")
EDITOR = "visual-studio-code"


def profile_toml(name: str, provider: str, **profile: Any) -> str:
    """One profile's table (values as TOML; JSON strings are TOML strings)."""

    def toml(value: Any) -> str:
        if isinstance(value, dict):
            return "{ " + ", ".join(f"{json.dumps(k)} = {toml(v)}" for k, v in value.items()) + " }"
        if isinstance(value, list):
            return "[" + ", ".join(toml(v) for v in value) + "]"
        return json.dumps(value)

    lines = [f"[profiles.{name}]", f"provider = {json.dumps(provider)}"]
    lines += [f"{key} = {toml(value)}" for key, value in profile.items()]
    return "\n".join(lines) + "\n"


def project_config(repo: Path, name: str, provider: str, **profile: Any) -> None:
    """A ``.baton.toml`` with one profile (the fake agent's: a project may not give an account
    CLI's profile its program, env or options — baton.config.trust)."""
    (repo / ".baton.toml").write_text(profile_toml(name, provider, **profile))


def user_profile(tmp_path: Path, name: str, provider: str, **profile: Any) -> None:
    """The test's user config (``BATON_CONFIG``) with one profile of an account CLI, as a
    user writes one: its program, env, login folder and options."""
    user_config(tmp_path, profile_toml(name, provider, **profile))


def plain(value: Any) -> Any:
    """Notification params as JSON (pygls hands unknown params over as named tuples)."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def record_permissions(session: Session) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    @session.client.feature("baton/permission")
    def on_permission(params: Any) -> None:
        seen.append(plain(params))

    return seen


@pytest.fixture
async def lsp(
    repo: Path, baton_home: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Session]:
    project_config(
        repo,
        "acp",
        "fake",
        options={"transport": "acp", "acp_argv": [sys.executable, FAKE], "acp_idle_exit": 20},
    )
    options = {"worker": "acp", "progressInterval": 0.0, **getattr(request, "param", {})}
    session = await start(EDITOR, repo, baton_home, options=options)
    yield session
    await stop(session)


def delegate_args(lsp: Session, instruction: str) -> dict[str, Any]:
    return {"uri": lsp.uri("app.py"), "kind": "delegate", "instruction": instruction}


async def test_a_plain_client_answers_in_a_message_request_and_sees_the_plan(lsp: Session) -> None:
    seen = record_permissions(lsp)
    lsp.rec.pick = 0  # "Allow"
    steps = script(
        {"plan": [["read", "completed"], ["write tests", "in_progress"], ["run", "pending"]]},
        {"say": "planning"},
        {"run": ["touch", "ran.txt"]},
        {"edit": "app.py", "content": "def a():\n    return 10\n"},
        {"say": "done"},
    )
    result = await lsp.command("baton.delegate", delegate_args(lsp, steps))
    tid = result["taskId"]
    assert await lsp.settle(tid, "review", "failed") == "review"
    (question,) = lsp.rec.questions
    assert "asks permission: touch ran.txt" in question.message
    assert [a.title for a in question.actions or []] == ["Allow", "Always allow", "Reject"]
    assert [p["status"] for p in seen] == ["pending", "answered"]
    assert seen[0]["taskId"] == tid and seen[0]["preview"] == "touch ran.txt"
    assert seen[1]["answer"] == "allow" and seen[1]["by"] == "user"
    # The plan reached the progress reports ("1/3: write tests") and the task summary.
    reports = [getattr(v, "message", None) for v in lsp.progress_of(tid)]
    assert "1/3: write tests" in reports
    summaries = [t for n in lsp.rec.tasks for t in n["tasks"] if t["id"] == tid]
    assert summaries[-1]["plan"][1] == {
        "text": "write tests",
        "status": "in_progress",
        "priority": "medium",
    }
    assert summaries[-1]["transport"] == "acp"
    await lsp.command("baton.accept", {"taskId": tid})
    await wait_for(lambda: (lsp.repo / "ran.txt").exists(), what="ran.txt accepted")
    assert "return 10" in (lsp.repo / "app.py").read_text()


@pytest.mark.parametrize("lsp", [{"permissionPrompts": "inline"}], indirect=True)
async def test_a_rich_client_answers_with_the_command(lsp: Session) -> None:
    seen = record_permissions(lsp)
    steps = script({"run": ["touch", "no.txt"]}, {"say": "skipped"})
    tid = (await lsp.command("baton.delegate", delegate_args(lsp, steps)))["taskId"]
    await wait_for(lambda: seen, what="baton/permission")
    # Waiting on the user is counted in the status bar.
    await wait_for(lambda: any(s.get("needsInput") == 1 for s in lsp.rec.status), what="count")
    inspected = await lsp.command("baton.inspect", {"taskId": tid, "events": 0})
    assert inspected["task"]["state"] == "needs_input"
    assert [p["id"] for p in inspected["permissions"]] == [seen[0]["id"]]
    answer = {"taskId": tid, "option": "reject", "permissionId": seen[0]["id"]}
    answered = await lsp.command("baton.answerPermission", answer)
    assert answered["option"]["kind"] == "reject_once"
    assert await lsp.settle(tid, "answered", "failed") == "answered"
    assert lsp.rec.questions == []  # the client shows prompts itself
    inspected = await lsp.command("baton.inspect", {"taskId": tid, "events": 0})
    assert inspected["task"]["summary"] == "The user rejected touch no.txt. skipped"
    with pytest.raises(Exception, match="no permission request is waiting"):
        await lsp.command("baton.answerPermission", {"taskId": tid, "option": "allow"})
