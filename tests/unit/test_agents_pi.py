"""The Pi adapter: launch and replays of captured real streams (Pi exits 0 on every failure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baton.agents.base import Turn
from baton.agents.pi import ARGV_PROMPT_LIMIT, QUIET_ENV, PiAdapter, PiParser, safe_prompt
from baton.config.profiles import Profile
from baton.core.events import Event, EventType
from baton.core.lifecycle import Completion
from baton.core.outcome import Outcome

STREAMS = Path(__file__).resolve().parents[1] / "fixtures" / "streams"


def replay(name: str) -> tuple[list[Event], Outcome]:
    parser = PiParser()
    out: list[Event] = []
    for line in (STREAMS / name).read_text().splitlines():
        out += parser.feed(line)
    out += parser.finish(0, "")
    return out, Outcome.fold(out)


def test_write_stream() -> None:
    evs, outcome = replay("pi-write.jsonl")
    kinds = [str(e.type) for e in evs]
    assert kinds == ["session", "usage", "tool", "tool_result", "text", "text", "usage", "final"]
    assert outcome.completion == Completion.COMPLETED
    assert outcome.session_id == "01a226c4-8b1c-7725-b8f5-820185c45232"
    assert outcome.answer == "Wrote hello.txt."
    # the session line names the cwd: paths come out relative to it
    assert evs[2].data == {"name": "write", "input": "hello.txt", "files": ["hello.txt"]}
    assert evs[3].data["ok"] is True and "Successfully wrote" in evs[3].data["output"]
    # Its cost is 0 (it knows no price for the scripted model): none, for Baton to estimate.
    assert evs[-2].data == {
        "input": 1448 + 1571,
        "cached": 0,
        "output": 37,
        "cost": None,
        "cost_source": None,
        "model": "mock-model",
    }


@pytest.mark.parametrize(
    ("name", "kind", "message"),
    [
        ("pi-ratelimit.jsonl", Completion.RATE_LIMIT, "429 mock rate limited; limit resets at"),
        ("pi-401.jsonl", Completion.AUTH, "401 mock invalid api key"),
        ("pi-500.jsonl", Completion.WORKER_ERROR, "500 mock internal error"),
        ("pi-dead.jsonl", Completion.NETWORK, "Connection error."),
        ("pi-cut.jsonl", Completion.WORKER_ERROR, "stream broke off (terminated)"),
        ("pi-nofinish.jsonl", Completion.WORKER_ERROR, "without a finish reason or token usage"),
    ],
)
def test_failure_streams_exit_0_but_fail(name: str, kind: Completion, message: str) -> None:
    evs, outcome = replay(name)
    assert outcome.completion == kind
    assert message in outcome.error_message
    assert sum(e.type == EventType.ERROR for e in evs) == 1


def test_rate_limit_reset_time() -> None:
    _, outcome = replay("pi-ratelimit.jsonl")
    assert outcome.resets_at == 1795950376.0


def test_retried_stream_text_is_shown_once() -> None:
    evs, _ = replay("pi-cut.jsonl")
    texts = [e.data["text"] for e in evs if e.type == EventType.TEXT]
    assert "".join(texts) == "partial answer"
    assert any(e.type == EventType.LOG and "retrying (1/1)" in e.data["message"] for e in evs)


def test_successful_retry_is_not_an_error() -> None:
    parser = PiParser()
    lines = [
        {"type": "session", "id": "s", "cwd": "/w"},
        {"type": "agent_start"},
        {
            "type": "message_end",
            "message": {
                "role": "assistant",
                "stopReason": "error",
                "errorMessage": "terminated",
                "content": [],
            },
        },
        {"type": "agent_end"},
        {"type": "auto_retry_start", "attempt": 1, "maxAttempts": 2, "errorMessage": "terminated"},
        {"type": "agent_start"},
        {
            "type": "message_end",
            "message": {
                "role": "assistant",
                "stopReason": "stop",
                "content": [{"type": "text", "text": "ok"}],
                "usage": {"input": 5, "output": 1, "totalTokens": 6},
            },
        },
        {"type": "agent_end"},
        {"type": "auto_retry_end", "success": True},
    ]
    evs = [e for line in lines for e in parser.feed(json.dumps(line))] + parser.finish(0, "")
    assert [e.data for e in evs if e.type == EventType.FINAL] == [{"text": "ok"}]
    assert not any(e.type == EventType.ERROR for e in evs)


def test_no_agent_end_is_a_worker_error() -> None:
    parser = PiParser()
    parser.feed(json.dumps({"type": "session", "id": "s"}))
    (err,) = parser.finish(1, "TypeError: boom\n")
    assert err.data["kind"] == "worker_error" and "TypeError: boom" in err.data["message"]


# --- launch --------------------------------------------------------------------------------


def test_launch(tmp_path: Path) -> None:
    profile = Profile(
        name="pi",
        provider="pi",
        binary="/bin/pi",
        model="mock/mock-model",
        env={"X": "1"},
        config_dir=str(tmp_path / "agent"),
        options={"provider": "ignored-when-the-model-names-one"},
    )
    t = Turn(task_id="t", prompt="@etc/passwd please", cwd=str(tmp_path))
    launch = PiAdapter().launch(t, profile)
    assert launch.argv == [
        "/bin/pi",
        "--mode",
        "json",
        "--offline",
        "--model",
        "mock/mock-model",
        "-p",
        " @etc/passwd please",
    ]
    assert launch.stdin is None  # a small prompt stays in argv, exactly as given
    assert launch.env["PI_CODING_AGENT_DIR"] == str(tmp_path / "agent")
    assert QUIET_ENV.items() <= launch.env.items() and launch.env["X"] == "1"


def test_launch_resume_with_provider_option(tmp_path: Path) -> None:
    profile = Profile(name="pi", provider="pi", model="m1", options={"provider": "acme"})
    t = Turn(task_id="t", prompt="more", cwd=str(tmp_path), session_id="uuid-1", reason="reply")
    argv = PiAdapter().launch(t, profile).argv
    assert argv[0] == "pi"
    assert argv[4:] == ["--provider", "acme", "--model", "m1", "--session", "uuid-1", "-p", "more"]


def test_a_prompt_over_the_argv_limit_goes_on_stdin(tmp_path: Path) -> None:
    profile = Profile(name="pi", provider="pi", model="m1")
    at_limit = "x" * ARGV_PROMPT_LIMIT
    small = PiAdapter().launch(Turn(task_id="t", prompt=at_limit, cwd=str(tmp_path)), profile)
    assert small.argv[-2:] == ["-p", at_limit] and small.stdin is None
    prompt = "-" + "é" * (ARGV_PROMPT_LIMIT // 2) + "\nTAIL"  # over the limit in bytes
    t = Turn(task_id="t", prompt=prompt, cwd=str(tmp_path), session_id="uuid-1", reason="reply")
    launch = PiAdapter().launch(t, profile)
    head = ["pi", "--mode", "json", "--offline", "--model", "m1"]
    assert launch.argv == [*head, "--session", "uuid-1", "-p"]
    assert launch.stdin == prompt  # whole, and no leading space: stdin is not parsed for flags


def test_safe_prompt() -> None:
    assert safe_prompt("-x") == " -x" and safe_prompt("@f") == " @f" and safe_prompt("ok") == "ok"


def test_reply_stream_resumes_the_session_of_the_first_turn() -> None:
    # captured from the e2e reply: `pi --session 01a226d9-…` keeps the session id
    _, outcome = replay("pi-reply.jsonl")
    assert outcome.session_id == "01a226d9-c144-75fd-a264-da35be10d3c7"
    assert outcome.completion == Completion.COMPLETED and outcome.answer == "Added a line."
