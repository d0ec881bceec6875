"""The Claude Code adapter: argv/env of a launch, and replays of streams captured from the real CLI.

The streams in tests/fixtures/streams/claude-*.jsonl were written by Claude Code 2.1.197 talking
to the scripted model server (tests/e2e/test_agent_clis.py and the failure runs of
tests/e2e/test_worker_claude.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baton.agents.base import Turn
from baton.agents.claude import MAX_RETRIES, QUIET_ENV, ClaudeAdapter, ClaudeParser, TextStream
from baton.agents.registry import adapter_for
from baton.config.profiles import Profile
from baton.core.events import Event, EventType
from baton.core.lifecycle import Completion
from baton.core.outcome import Outcome

STREAMS = Path(__file__).resolve().parents[1] / "fixtures" / "streams"


def replay(name: str, exit_code: int | None = 1) -> list[Event]:
    parser = ClaudeParser()
    out: list[Event] = []
    for line in (STREAMS / name).read_text().splitlines():
        out.extend(parser.feed(line))
    out.extend(parser.finish(exit_code, ""))
    return out


def outcome(evs: list[Event]) -> Outcome:
    return Outcome.fold(evs)


def of(evs: list[Event], kind: EventType) -> list[dict[str, object]]:
    return [e.data for e in evs if e.type == kind]


# --- launch -----------------------------------------------------------------------------------


def test_first_turn_argv_env_and_prompt_on_stdin() -> None:
    profile = Profile(
        name="work",
        provider="claude",
        binary="/opt/claude",
        model="claude-sonnet-4-5",
        env={"ANTHROPIC_API_KEY": "k", "DISABLE_TELEMETRY": "0"},
        config_dir="~/accounts/work",
    )
    turn = Turn(task_id="t1", prompt="--do it", cwd="/w/tree")
    launch = adapter_for("claude").launch(turn, profile)
    argv = launch.argv
    assert argv[:2] == ["/opt/claude", "-p"]
    assert argv[argv.index("--output-format") + 1] == "stream-json" and "--verbose" in argv
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"
    allowed = argv[argv.index("--allowedTools") + 1 : argv.index("--model")]
    assert {"Bash", "Edit", "Write", "Read"} <= set(allowed)
    assert argv[argv.index("--model") + 1] == "claude-sonnet-4-5"
    assert "--resume" not in argv and "--do it" not in argv  # the prompt goes on stdin
    assert launch.stdin == "--do it" and launch.cwd == "/w/tree"
    assert launch.env["CLAUDE_CONFIG_DIR"] == str(Path.home() / "accounts" / "work")
    assert launch.env["ANTHROPIC_API_KEY"] == "k"
    for key, value in QUIET_ENV.items():  # the switches win over the profile's env
        assert launch.env[key] == value


def test_resumed_turn_and_options() -> None:
    profile = Profile(
        name="c",
        provider="claude",
        options={
            "permission_mode": "default",
            "allowed_tools": ["Read"],
            "disallowed_tools": "WebFetch WebSearch",
            "max_turns": 7,
        },
    )
    turn = Turn(task_id="t", prompt="more", cwd="/w", reason="reply", session_id="s-1", model="m")
    argv = ClaudeAdapter().launch(turn, profile).argv
    assert argv[0] == "claude"
    assert argv[argv.index("--resume") + 1] == "s-1"
    assert argv[argv.index("--permission-mode") + 1] == "default"
    assert argv[argv.index("--allowedTools") + 1 : argv.index("--disallowedTools")] == ["Read"]
    assert argv[argv.index("--disallowedTools") + 1 : argv.index("--model")] == [
        "WebFetch",
        "WebSearch",
    ]
    assert argv[argv.index("--model") + 1] == "m"
    assert argv[argv.index("--max-turns") + 1] == "7"
    assert "CLAUDE_CONFIG_DIR" not in ClaudeAdapter().launch(turn, profile).env


# --- replays ----------------------------------------------------------------------------------


def test_write_stream() -> None:
    evs = replay("claude-write.jsonl", exit_code=0)
    assert evs[0].type == EventType.SESSION
    assert evs[0].data["id"] == "dc51141e-2346-43d2-a77e-3dbc0687556d"
    assert of(evs, EventType.TOOL) == [
        {"name": "Write", "input": "hello.txt", "files": ["hello.txt"]}
    ]
    (result,) = of(evs, EventType.TOOL_RESULT)
    assert result["name"] == "Write" and result["ok"] is True
    assert "File created successfully" in str(result["output"])
    *running, usage = of(evs, EventType.USAGE)
    # While the turn runs, each message's usage (its input; its output only begun).
    assert [(u["input"], u["output"], u["running"]) for u in running] == [
        (29381, 1, True),
        (29381 + 29521, 2, True),
    ]
    assert usage == {
        "input": 58902,
        "cached": 0,
        "output": 38,
        "cost": 0.177276,
        "cost_source": "reported",
        "seen_input": 58902,  # what the process's own messages said they read
    }
    assert evs[-1].type == EventType.FINAL and evs[-1].data == {"text": "Wrote hello.txt."}
    o = outcome(evs)
    assert o.completion == Completion.COMPLETED and o.answer == "Wrote hello.txt."


def test_rate_limit_stream_has_reset_time() -> None:
    evs = replay("claude-ratelimit.jsonl")
    assert any("HTTP 429" in str(d["message"]) for d in of(evs, EventType.LOG))
    (error,) = of(evs, EventType.ERROR)
    assert error["kind"] == "rate_limit" and error["status"] == 429
    assert error["resets_at"] == 1795950348.0
    assert "limit resets at" in str(error["message"])
    assert of(evs, EventType.FINAL) == []
    o = outcome(evs)
    assert o.completion == Completion.RATE_LIMIT and o.resets_at == 1795950348.0


@pytest.mark.parametrize(
    ("name", "kind", "words"),
    [
        ("claude-401.jsonl", Completion.AUTH, "401"),
        ("claude-500.jsonl", Completion.WORKER_ERROR, "500"),
        ("claude-cut.jsonl", Completion.NETWORK, "ECONNRESET"),
        ("claude-dead.jsonl", Completion.NETWORK, "ECONNRESET"),
        ("claude-down.jsonl", Completion.NETWORK, "ConnectionRefused"),
        ("claude-nofinish.jsonl", Completion.NETWORK, "cut off"),
    ],
)
def test_failure_streams(name: str, kind: Completion, words: str) -> None:
    """Failures are judged by is_error / stop_reason, although every one says subtype success."""
    lines = (STREAMS / name).read_text().splitlines()
    assert json.loads(lines[-1])["subtype"] == "success"
    evs = replay(name)
    o = outcome(evs)
    assert o.completion == kind and words in o.error_message
    assert of(evs, EventType.FINAL) == []
    # The synthetic error message is not shown as the model's text.
    assert all("API Error" not in str(d["text"]) for d in of(evs, EventType.TEXT))


def test_retried_stream_text_is_not_shown_twice() -> None:
    """Deltas of a cut stream, then the non-streaming retry's whole message: shown once."""
    evs = replay("claude-cut-retry.jsonl", exit_code=0)
    texts = of(evs, EventType.TEXT)
    shown = "".join(str(d["text"]) for d in texts)
    final = "The quick brown fox jumps over the lazy dog and keeps running far away."
    assert shown == final
    assert all(d["delta"] is True for d in texts)
    assert outcome(evs).completion == Completion.COMPLETED


def test_restarted_stream_deltas_are_deduplicated() -> None:
    parser = ClaudeParser()

    def ev(event: dict[str, object]) -> list[Event]:
        return parser.feed(json.dumps({"type": "stream_event", "event": event}))

    def delta(text: str) -> list[Event]:
        return ev({"type": "content_block_delta", "delta": {"type": "text_delta", "text": text}})

    shown: list[Event] = []
    shown += ev({"type": "message_start", "message": {"id": "m1"}})
    shown += delta("Hello wor")
    shown += ev({"type": "message_start", "message": {"id": "m2"}})  # the stream was retried
    shown += delta("Hello")
    shown += delta(" world")
    shown += delta("!")
    shown += ev({"type": "message_stop"})
    # The final assistant event of m2 repeats the block: not shown again.
    msg = {"id": "m2", "model": "x", "content": [{"type": "text", "text": "Hello world!"}]}
    shown += parser.feed(json.dumps({"type": "assistant", "message": msg}))
    assert [e.data["text"] for e in shown] == ["Hello wor", "ld", "!"]


def test_text_stream_divergent_retry_still_shows_new_text() -> None:
    ts = TextStream()
    assert ts.delta("abc") == "abc"
    ts.restart()
    assert ts.delta("ab") == ""
    assert ts.delta("X") == "X"  # diverged: shown after what is there
    ts.commit()
    assert ts.block("new block") == "new block" and not ts.pending


def test_result_without_end_marker_is_an_error_with_stderr() -> None:
    parser = ClaudeParser()
    parser.feed('{"type":"system","subtype":"init","session_id":"s","cwd":"/w"}')
    (err,) = parser.finish(1, "Error: Invalid API key · Please run /login")
    assert err.type == EventType.ERROR and err.data["kind"] == "auth"
    assert "before its result" in err.data["message"] and err.data["exit_code"] == 1
    assert parser.finish(1, "") == []


def test_max_turns_and_permission_denials() -> None:
    parser = ClaudeParser()
    denied = parser.feed(
        json.dumps(
            {
                "type": "result",
                "subtype": "error_max_turns",
                "is_error": True,
                "terminal_reason": "max_turns",
                "session_id": "s",
                "permission_denials": [{"tool_name": "Bash", "tool_input": {}}],
            }
        )
    )
    logs = [e for e in denied if e.type == EventType.LOG]
    assert logs and "Bash" in logs[0].data["message"]
    assert outcome(denied).completion == Completion.MAX_TURNS


def test_tool_files_are_relative_to_the_session_cwd_and_tools_deduplicated() -> None:
    parser = ClaudeParser()
    parser.feed('{"type":"system","subtype":"init","session_id":"s","cwd":"/w/tree"}')
    block = {
        "type": "tool_use",
        "id": "call1",
        "name": "Edit",
        "input": {"file_path": "/w/tree/src/a.py", "old_string": "a", "new_string": "b"},
    }
    line = json.dumps({"type": "assistant", "message": {"id": "m", "content": [block]}})
    (tool,) = parser.feed(line)
    assert tool.data == {"name": "Edit", "input": "src/a.py", "files": ["src/a.py"]}
    assert parser.feed(line) == []  # the same call again
    outside = {"type": "tool_use", "id": "c2", "name": "Write", "input": {"file_path": "/etc/x"}}
    bash = {"type": "tool_use", "id": "c3", "name": "Bash", "input": {"command": "ls -la"}}
    line = json.dumps({"type": "assistant", "message": {"id": "m2", "content": [outside, bash]}})
    w, b = parser.feed(line)
    assert w.data["files"] == ["/etc/x"]
    assert b.data == {"name": "Bash", "input": "ls -la", "files": []}
    result = {"type": "tool_result", "tool_use_id": "c3", "is_error": True, "content": "nope"}
    (r,) = parser.feed(json.dumps({"type": "user", "message": {"content": [result]}}))
    assert r.data == {"name": "Bash", "ok": False, "output": "nope"}


def test_garbage_lines_become_warnings() -> None:
    parser = ClaudeParser()
    (log,) = parser.feed("not json at all")
    assert log.type == EventType.LOG and "unparsed" in log.data["message"]
    assert parser.feed("") == [] and parser.feed('{"type":"unknown"}') == []


def test_an_authentication_failure_ends_the_attempt_at_its_first_retry() -> None:
    parser = ClaudeParser()
    retry = {
        "type": "system",
        "subtype": "api_retry",
        "attempt": 1,
        "max_retries": 10,
        "retry_delay_ms": 600,
        "error_status": 401,
        "error": "authentication_failed",
    }
    (event,) = parser.feed(json.dumps(retry))
    assert event.type == EventType.ERROR and event.data["kind"] == "auth"
    assert event.data["stop"] is True  # the runtime ends the process on this
    assert parser.finish(143, "") == []  # the killed process adds nothing


def test_a_server_error_retry_is_only_a_warning() -> None:
    retry = {"type": "system", "subtype": "api_retry", "error_status": 500, "error": "unknown"}
    (event,) = ClaudeParser().feed(json.dumps(retry))
    assert event.type == EventType.LOG


def test_claude_code_retries_are_bounded_unless_the_profile_says_otherwise(
    tmp_path: Path,
) -> None:
    turn = Turn(task_id="t", prompt="p", cwd=str(tmp_path))
    launch = ClaudeAdapter().launch(turn, Profile(name="c", provider="claude"))
    assert launch.env["CLAUDE_CODE_MAX_RETRIES"] == str(MAX_RETRIES)
    mine = Profile(name="c", provider="claude", env={"CLAUDE_CODE_MAX_RETRIES": "5"})
    assert ClaudeAdapter().launch(turn, mine).env["CLAUDE_CODE_MAX_RETRIES"] == "5"
    opt = Profile(name="c", provider="claude", options={"max_retries": 0})
    assert ClaudeAdapter().launch(turn, opt).env["CLAUDE_CODE_MAX_RETRIES"] == "0"
