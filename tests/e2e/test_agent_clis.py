"""The five real agent CLIs, headless, against Baton's scripted model server on 127.0.0.1.

Each test runs one CLI in a temp git repo; the scripted model asks it to write a file. The CLIs
come from `scripts/install-agents` (`.cache/agents`); a missing one is skipped LOUDLY. A deny-all
proxy on 127.0.0.1 (HTTPS_PROXY/HTTP_PROXY, NO_PROXY=127.0.0.1,localhost) must see no connection.

Set BATON_CAPTURE_STREAMS=1 to (re)write tests/fixtures/streams/<cli>-{write,ratelimit}.jsonl.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.modelserver import (  # noqa: E402
    Answer,
    DenyAllProxy,
    Launch,
    ModelServer,
    RateLimit,
    Script,
    agent_bin,
    env_for_claude,
    env_for_codex,
    env_for_gemini,
    env_for_opencode,
    env_for_pi,
    write_file,
)

pytestmark = pytest.mark.agents

STREAMS = REPO / "tests" / "fixtures" / "streams"
CONTENT = "hello from the scripted model\n"
FINAL = "Wrote hello.txt."
PROMPT = "Create hello.txt containing a greeting."
TIMEOUT = 30.0

LaunchFor = Callable[..., Launch]
LAUNCHERS: dict[str, LaunchFor] = {
    "claude": env_for_claude,
    "codex": env_for_codex,
    "opencode": env_for_opencode,
    "gemini": env_for_gemini,
    "pi": env_for_pi,
}


def _require(cli: str) -> None:
    if not agent_bin(cli).exists():
        pytest.skip(
            f"!!! AGENT CLI '{cli}' IS NOT INSTALLED ({agent_bin(cli)} missing): "
            "run scripts/install-agents before the agent tests !!!"
        )


def _git_repo(path: Path) -> Path:
    path.mkdir()
    git = ["git", "-C", str(path), "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "README.md").write_text("# scratch\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], check=True)
    return path


def _jsonl(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def _capture(name: str, stdout: str) -> None:
    if os.environ.get("BATON_CAPTURE_STREAMS") == "1":
        STREAMS.mkdir(parents=True, exist_ok=True)
        (STREAMS / name).write_text(stdout)


def _run(
    cli: str, script: Script, tmp_path: Path
) -> tuple[subprocess.CompletedProcess[str], ModelServer, list[str], Path]:
    _require(cli)
    repo = _git_repo(tmp_path / "repo")
    home = tmp_path / "home"
    home.mkdir()
    with DenyAllProxy() as proxy, ModelServer(script) as srv:
        launch = LAUNCHERS[cli](srv, home, proxy=proxy.url)
        result = launch.run(PROMPT, repo, timeout=TIMEOUT)
        attempts = proxy.attempts
    (tmp_path / "stdout.jsonl").write_text(result.stdout)
    (tmp_path / "stderr.txt").write_text(result.stderr)
    srv.dump(tmp_path / "requests.jsonl")
    assert result.returncode != -9, f"{cli} timed out after {TIMEOUT}s; stderr:\n{result.stderr}"
    return result, srv, attempts, repo


def _only_local(srv: ModelServer, attempts: list[str]) -> None:
    assert attempts == [], f"call-home attempts through the deny-all proxy: {attempts}"
    assert srv.requests, "the CLI never called the model server"
    for rec in srv.requests:
        assert rec.client[0] == "127.0.0.1"
        assert rec.headers.get("host", "").startswith(f"127.0.0.1:{srv.port}")
    assert srv.errors == []


# --- what each CLI's stdout must show after the write run ---------------------------------


def _claude_wrote(events: list[dict[str, Any]], path: Path) -> None:
    tool = next(
        c
        for e in events
        if e["type"] == "assistant"
        for c in e["message"]["content"]
        if c["type"] == "tool_use"
    )
    assert tool["name"] == "Write" and tool["input"]["file_path"] == str(path)
    result = events[-1]
    assert result["type"] == "result" and result["is_error"] is False
    assert result["result"] == FINAL and result["num_turns"] == 2


def _codex_wrote(events: list[dict[str, Any]], path: Path) -> None:
    items = [e["item"] for e in events if e["type"] == "item.completed"]
    change = next(i for i in items if i["type"] == "file_change")
    assert change["changes"] == [{"path": str(path), "kind": "add"}]
    assert items[-1] == {**items[-1], "type": "agent_message", "text": FINAL}
    assert events[-1]["type"] == "turn.completed" and events[-1]["usage"]["input_tokens"] > 0


def _opencode_wrote(events: list[dict[str, Any]], path: Path) -> None:
    tool = next(e["part"] for e in events if e["type"] == "tool_use")
    assert tool["tool"] == "write" and tool["state"]["status"] == "completed"
    assert tool["state"]["input"]["filePath"] == str(path)
    assert [e["part"]["text"] for e in events if e["type"] == "text"] == [FINAL]
    finishes = [e["part"]["reason"] for e in events if e["type"] == "step_finish"]
    assert finishes == ["tool-calls", "stop"]


def _gemini_wrote(events: list[dict[str, Any]], path: Path) -> None:
    tool = next(e for e in events if e["type"] == "tool_use")
    assert tool["tool_name"] == "write_file" and tool["parameters"]["file_path"] == str(path)
    assert next(e for e in events if e["type"] == "tool_result")["status"] == "success"
    deltas = [e["content"] for e in events if e["type"] == "message" and e["role"] == "assistant"]
    assert "".join(deltas) == FINAL
    assert events[-1]["type"] == "result" and events[-1]["status"] == "success"


def _pi_wrote(events: list[dict[str, Any]], path: Path) -> None:
    assert events[0]["type"] == "session"
    start = next(e for e in events if e["type"] == "tool_execution_start")
    assert start["toolName"] == "write" and start["args"]["path"] == str(path)
    assert next(e for e in events if e["type"] == "tool_execution_end")["isError"] is False
    ends = [e["message"] for e in events if e["type"] == "message_end"]
    last = [m for m in ends if m["role"] == "assistant"][-1]
    assert last["stopReason"] == "stop" and last["content"][0]["text"] == FINAL


WROTE: dict[str, Callable[[list[dict[str, Any]], Path], None]] = {
    "claude": _claude_wrote,
    "codex": _codex_wrote,
    "opencode": _opencode_wrote,
    "gemini": _gemini_wrote,
    "pi": _pi_wrote,
}


@pytest.mark.parametrize("cli", list(LAUNCHERS))
def test_cli_writes_a_file_using_only_the_local_model(cli: str, tmp_path: Path) -> None:
    script = Script.of(write_file("hello.txt", CONTENT), Answer(FINAL))
    result, srv, attempts, repo = _run(cli, script, tmp_path)
    assert result.returncode == 0, f"{cli} rc={result.returncode}\nstderr:\n{result.stderr}"
    assert (repo / "hello.txt").read_text() == CONTENT
    _only_local(srv, attempts)
    outcomes = [r.outcome for r in srv.main_requests]
    assert outcomes[0].startswith("tool_call ") and outcomes[1:] == ["answer"]
    WROTE[cli](_jsonl(result.stdout), repo / "hello.txt")
    _capture(f"{cli}-write.jsonl", result.stdout)


# --- a model that is always rate limited ---------------------------------------------------


def _claude_limited(result: subprocess.CompletedProcess[str], events: list[dict[str, Any]]) -> None:
    assert result.returncode == 1
    assert any(e.get("subtype") == "api_retry" and e["error_status"] == 429 for e in events)
    final = events[-1]
    assert final["type"] == "result" and final["is_error"] is True
    assert final["api_error_status"] == 429 and "limit resets at" in final["result"]


def _codex_limited(result: subprocess.CompletedProcess[str], events: list[dict[str, Any]]) -> None:
    assert result.returncode == 1
    assert events[-1]["type"] == "turn.failed"
    assert "429" in events[-1]["error"]["message"]


def _opencode_limited(
    result: subprocess.CompletedProcess[str], events: list[dict[str, Any]]
) -> None:
    assert result.returncode == 1
    error = next(e for e in events if e["type"] == "error")["error"]["data"]
    assert error["statusCode"] == 429 and error["isRetryable"] is True
    assert "limit resets at" in error["message"]


def _gemini_limited(result: subprocess.CompletedProcess[str], events: list[dict[str, Any]]) -> None:
    assert result.returncode == 429 % 256
    final = events[-1]
    assert final["type"] == "result" and final["status"] == "error"
    assert "limit resets at" in final["error"]["message"]


def _pi_limited(result: subprocess.CompletedProcess[str], events: list[dict[str, Any]]) -> None:
    assert result.returncode == 0  # json mode: rc says nothing, the last message does
    last = [e["message"] for e in events if e["type"] == "message_end"][-1]
    assert last["stopReason"] == "error" and last["errorMessage"].startswith("429 ")
    assert events[-1] == {**events[-1], "type": "auto_retry_end", "success": False}


LIMITED: dict[str, Callable[[subprocess.CompletedProcess[str], list[dict[str, Any]]], None]] = {
    "claude": _claude_limited,
    "codex": _codex_limited,
    "opencode": _opencode_limited,
    "gemini": _gemini_limited,
    "pi": _pi_limited,
}


@pytest.mark.slow
@pytest.mark.parametrize("cli", list(LAUNCHERS))
def test_cli_reports_a_persistent_rate_limit(cli: str, tmp_path: Path) -> None:
    result, srv, attempts, repo = _run(cli, Script.of(RateLimit(times=None)), tmp_path)
    _only_local(srv, attempts)
    limited = [r for r in srv.main_requests if r.outcome == "rate_limit"]
    assert len(limited) >= 2, "the CLI should retry a 429 at least once"
    assert not (repo / "hello.txt").exists()
    LIMITED[cli](result, _jsonl(result.stdout))
    _capture(f"{cli}-ratelimit.jsonl", result.stdout)
