"""The Codex adapter: argv/env of a launch, and replays of streams captured from the real CLI.

The streams in tests/fixtures/streams/codex-*.jsonl were written by Codex 0.171.0 talking to the
scripted model server (tests/e2e/test_agent_clis.py and the failure runs of
tests/e2e/test_worker_codex.py); codex-down.jsonl is a server that refuses connections.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from baton.agents.base import Turn
from baton.agents.codex import ARGV_PROMPT_LIMIT, QUIET_ARGS, CodexAdapter, CodexParser
from baton.agents.registry import adapter_for
from baton.config.profiles import Profile
from baton.core.events import Event, EventType
from baton.core.lifecycle import Completion
from baton.core.outcome import Outcome

STREAMS = Path(__file__).resolve().parents[1] / "fixtures" / "streams"
WRITE_CWD = "/tmp/pytest-of-root/pytest-28/test_cli_writes_a_file_using_o1/repo"


def replay(name: str, exit_code: int | None = 1, cwd: str | None = None) -> list[Event]:
    parser = CodexParser(cwd=cwd)
    out: list[Event] = []
    for line in (STREAMS / name).read_text().splitlines():
        out.extend(parser.feed(line))
    out.extend(parser.finish(exit_code, "Reading additional input from stdin...\n"))
    return out


def outcome(evs: list[Event]) -> Outcome:
    return Outcome.fold(evs)


def of(evs: list[Event], kind: EventType) -> list[dict[str, object]]:
    return [e.data for e in evs if e.type == kind]


# --- launch -----------------------------------------------------------------------------------


def test_first_turn_argv_env_and_closed_stdin() -> None:
    profile = Profile(
        name="codex",
        provider="codex",
        binary="/opt/codex",
        model="gpt-5.5",
        env={"OPENAI_API_KEY": "k"},
        config_dir="/accounts/codex-work",
    )
    turn = Turn(task_id="t", prompt="-fix it", cwd="/w/tree")
    launch = adapter_for("codex").launch(turn, profile)
    argv = launch.argv
    assert argv[:3] == ["/opt/codex", "exec", "--json"]
    text = " ".join(argv)
    assert " ".join(QUIET_ARGS) in text  # analytics, update check and plugins off
    assert argv[argv.index("-s") + 1] == "workspace-write"
    assert 'approval_policy="never"' in argv and "--skip-git-repo-check" in argv
    assert argv[argv.index("-C") + 1] == "/w/tree"
    assert argv[argv.index("-m") + 1] == "gpt-5.5"
    assert argv[-2:] == ["--", "-fix it"] and "resume" not in argv
    assert launch.stdin is None  # /dev/null: Codex would wait on an open stdin
    assert launch.env == {"OPENAI_API_KEY": "k", "CODEX_HOME": "/accounts/codex-work"}


def test_resume_and_options() -> None:
    profile = Profile(
        name="c",
        provider="codex",
        options={"sandbox": "read-only", "config": {"model_reasoning_effort": '"low"'}},
    )
    turn = Turn(task_id="t", prompt="again", cwd="/w", reason="reply", session_id="th-1")
    argv = CodexAdapter().launch(turn, profile).argv
    assert argv[0] == "codex" and argv[argv.index("-s") + 1] == "read-only"
    assert 'model_reasoning_effort="low"' in argv
    assert argv[-4:] == ["resume", "th-1", "--", "again"]
    assert "-m" not in argv


def test_huge_prompt_goes_on_stdin() -> None:
    prompt = "x" * (ARGV_PROMPT_LIMIT + 1)
    launch = CodexAdapter().launch(
        Turn(task_id="t", prompt=prompt, cwd="/w"), Profile("c", "codex")
    )
    assert launch.argv[-1] == "-" and launch.stdin == prompt


# --- replays ----------------------------------------------------------------------------------


def test_write_stream() -> None:
    evs = replay("codex-write.jsonl", exit_code=0, cwd=WRITE_CWD)
    assert evs[0].type == EventType.SESSION
    assert evs[0].data == {"id": "01a226c4-4abb-7642-b794-42de7beda66f"}
    tools = of(evs, EventType.TOOL)
    assert tools == [{"name": "apply_patch", "input": "add hello.txt", "files": ["hello.txt"]}]
    assert of(evs, EventType.TOOL_RESULT) == [{"name": "apply_patch", "ok": True, "output": ""}]
    (usage,) = of(evs, EventType.USAGE)
    assert usage == {
        "input": 20062,
        "cached": 0,
        "output": 43,
        "reasoning": 0,
        "cost": None,
        "cost_source": None,
        "of": "session",  # the thread's totals: a resumed thread's count earlier turns
    }
    assert evs[-1].type == EventType.FINAL and evs[-1].data == {"text": "Wrote hello.txt."}
    assert outcome(evs).completion == Completion.COMPLETED


def test_paths_relative_to_the_git_root_without_a_cwd(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "sub").mkdir()
    item = {
        "id": "i",
        "type": "file_change",
        "changes": [{"path": str(tmp_path / "sub" / "a.py"), "kind": "update"}],
        "status": "completed",
    }
    parser = CodexParser()
    tool, result = parser.feed(json.dumps({"type": "item.completed", "item": item}))
    assert tool.data == {"name": "apply_patch", "input": "update sub/a.py", "files": ["sub/a.py"]}
    assert result.data["ok"] is True


def test_rate_limit_stream() -> None:
    evs = replay("codex-ratelimit.jsonl")
    (error,) = of(evs, EventType.ERROR)
    assert error["kind"] == "rate_limit" and "429" in str(error["message"])
    # Codex drops the server's message (and its reset time): the supervisor's default applies.
    assert error["resets_at"] is None
    assert outcome(evs).completion == Completion.RATE_LIMIT


@pytest.mark.parametrize(
    ("name", "kind", "words"),
    [
        ("codex-401.jsonl", Completion.AUTH, "401 Unauthorized"),
        ("codex-500.jsonl", Completion.WORKER_ERROR, "high demand"),
        ("codex-cut.jsonl", Completion.NETWORK, "stream disconnected"),
        ("codex-dead.jsonl", Completion.NETWORK, "error sending request"),
        ("codex-nofinish.jsonl", Completion.NETWORK, "response.completed"),
    ],
)
def test_failure_streams(name: str, kind: Completion, words: str) -> None:
    evs = replay(name)
    o = outcome(evs)
    assert o.completion == kind and words in o.error_message
    assert len(of(evs, EventType.ERROR)) == 1 and of(evs, EventType.FINAL) == []


def test_retried_stream_text_is_not_shown_twice() -> None:
    """A message of a stream that broke, then the retried stream's longer message: shown once."""
    evs = replay("codex-nofinish-retry.jsonl", exit_code=0)
    texts = of(evs, EventType.TEXT)
    assert "".join(str(d["text"]) for d in texts) == "Partial words here and the rest."
    assert texts[-1]["delta"] is True
    assert outcome(evs).answer == "Partial words here and the rest."


def test_dead_server_reconnect_loop_is_stopped() -> None:
    """Codex retries a refusing server forever: three 'waiting for network' lines end it."""
    lines = (STREAMS / "codex-down.jsonl").read_text().splitlines()
    parser = CodexParser()
    evs: list[Event] = []
    for line in lines[:-1]:
        evs.extend(parser.feed(line))
    assert of(evs, EventType.ERROR) == []  # two reconnects: still hoping
    evs.extend(parser.feed(lines[-1]))
    (error,) = of(evs, EventType.ERROR)
    assert error["kind"] == "network" and error["stop"] is True
    assert "retry forever" in str(error["message"])
    assert parser.finish(137, "") == []  # the kill that follows adds nothing


def test_reconnect_count_resets_on_progress() -> None:
    parser = CodexParser(reconnect_limit=2)
    wait = json.dumps({"type": "error", "message": "Reconnecting... waiting for network (x)"})
    assert not of(parser.feed(wait), EventType.ERROR)
    parser.feed('{"type":"turn.started"}')
    assert not of(parser.feed(wait), EventType.ERROR)
    assert of(parser.feed(wait), EventType.ERROR)


def test_no_end_marker_is_an_error_naming_stderr() -> None:
    parser = CodexParser()
    parser.feed('{"type":"thread.started","thread_id":"th"}')
    stderr = "Reading additional input from stdin...\nError: Not inside a trusted directory\n"
    (err,) = parser.finish(1, stderr)
    assert err.data["kind"] == "worker_error" and err.data["exit_code"] == 1
    assert "Not inside a trusted directory" in err.data["message"]
    assert "Reading additional input" not in err.data["message"]


def test_commands_plans_and_other_items() -> None:
    parser = CodexParser(cwd="/w")
    cmd = {
        "id": "c",
        "type": "command_execution",
        "command": "/bin/bash -lc 'ls'",
        "aggregated_output": "a\n",
        "exit_code": 2,
        "status": "failed",
    }
    (start,) = parser.feed(json.dumps({"type": "item.started", "item": {**cmd, "status": "x"}}))
    assert start.data == {"name": "shell", "input": "/bin/bash -lc 'ls'", "files": []}
    (done,) = parser.feed(json.dumps({"type": "item.completed", "item": cmd}))
    assert done.data == {"name": "shell", "ok": False, "output": "a\n"}
    todo = {"id": "p", "type": "todo_list", "items": [{"text": "one", "completed": True}]}
    (plan,) = parser.feed(json.dumps({"type": "item.started", "item": todo}))
    assert plan.data == {"entries": [{"text": "one", "status": "completed"}]}
    warn = {"id": "e", "type": "error", "message": "Model metadata not found"}
    (log,) = parser.feed(json.dumps({"type": "item.completed", "item": warn}))
    assert log.type == EventType.LOG
