"""The OpenCode adapter: launch (argv, env, config folder) and replays of captured real streams."""

from __future__ import annotations

import json
from pathlib import Path

from baton.agents.base import StderrReader, Turn
from baton.agents.opencode import (
    LOOP_LIMIT,
    MAX_FAILURES,
    QUIET_ENV,
    OpenCodeAdapter,
    OpenCodeParser,
    config_dirs,
    seed_config_dir,
)
from baton.config.profiles import Profile
from baton.core.events import Event, EventType
from baton.core.lifecycle import Completion
from baton.core.outcome import Outcome
from baton.process.spawn import agent_env

STREAMS = Path(__file__).resolve().parents[1] / "fixtures" / "streams"
SESSION = "ses_dd93ba5c4ffe7V2GETc0TJH1pU"


def replay(name: str, exit_code: int | None = 0) -> tuple[list[Event], Outcome]:
    parser = OpenCodeParser()
    out: list[Event] = []
    for line in (STREAMS / name).read_text().splitlines():
        out += parser.feed(line)
    out += parser.finish(exit_code, "")
    return out, Outcome.fold(out)


def types(evs: list[Event]) -> list[str]:
    return [str(e.type) for e in evs]


def test_write_stream_gives_tool_usage_and_final_answer() -> None:
    evs, outcome = replay("opencode-write.jsonl")
    assert types(evs) == [
        "session",
        "tool",
        "tool_result",
        "usage",
        "text",
        "usage",
        "final",
    ]
    assert outcome.completion == Completion.COMPLETED
    assert outcome.session_id == SESSION and outcome.answer == "Wrote hello.txt."
    tool = evs[1].data
    assert tool["name"] == "write" and tool["files"][0].endswith("/repo/hello.txt")
    assert evs[2].data == {"name": "write", "ok": True, "output": "Wrote file successfully."}
    # Its cost is 0 (it knows no price for the scripted model): none, for Baton to estimate.
    assert evs[-2].data == {
        "input": 7482 + 7585,
        "cached": 0,
        "output": 38,
        "reasoning": 0,
        "cost": None,
        "cost_source": None,
    }


def test_rate_limit_stream_carries_the_reset_time() -> None:
    _, outcome = replay("opencode-ratelimit.jsonl", exit_code=1)
    assert outcome.completion == Completion.RATE_LIMIT
    assert outcome.resets_at == 1795950364.0
    assert outcome.error_message.startswith("429 mock rate limited")


def test_unauthorized_stream_is_auth() -> None:
    _, outcome = replay("opencode-401.jsonl", exit_code=1)
    assert outcome.completion == Completion.AUTH
    assert outcome.error_message == "401 mock invalid api key"


def test_stream_that_keeps_breaking_is_stopped_as_network() -> None:
    evs, outcome = replay("opencode-cut.jsonl", exit_code=None)
    errors = [e for e in evs if e.type == EventType.ERROR]
    assert len(errors) == 1 and errors[0].data["stop"] is True
    assert outcome.completion == Completion.NETWORK
    assert "broke off 3 times in a row" in outcome.error_message


def test_stream_without_finish_reason_loops_and_is_stopped_once() -> None:
    evs, outcome = replay("opencode-nofinish.jsonl", exit_code=None)
    errors = [e for e in evs if e.type == EventType.ERROR]
    assert [e.data["stop"] for e in errors] == [True]
    assert outcome.completion == Completion.NETWORK
    assert f"without a finish reason {LOOP_LIMIT} times in a row" in outcome.error_message
    # the retried step repeats the same text: shown once
    texts = [e.data["text"] for e in evs if e.type == EventType.TEXT]
    assert texts == ["partial answer without finish"]


def test_loop_is_not_reported_before_the_limit() -> None:
    parser = OpenCodeParser(loop_limit=3)
    line = json.dumps({"type": "step_finish", "sessionID": "s", "part": {"reason": "unknown"}})
    parser.feed(json.dumps({"type": "step_start", "sessionID": "s", "part": {}}))
    assert all(e.type != EventType.ERROR for e in parser.feed(line))
    parser.feed(json.dumps({"type": "step_start", "sessionID": "s", "part": {}}))
    assert all(e.type != EventType.ERROR for e in parser.feed(line))
    parser.feed(json.dumps({"type": "step_start", "sessionID": "s", "part": {}}))
    assert any(e.type == EventType.ERROR for e in parser.feed(line))


def test_exit_without_a_stop_step_is_a_worker_error_with_stderr() -> None:
    parser = OpenCodeParser()
    parser.feed(json.dumps({"type": "step_start", "sessionID": "s", "part": {}}))
    (err,) = parser.finish(1, "boom\nError: Model not found: mock/nope\n")
    assert err.type == EventType.ERROR
    assert err.data["kind"] == "model_unavailable"
    assert "before the model finished" in err.data["message"] and "nope" in err.data["message"]


def test_tool_paths_are_relative_to_the_cwd(tmp_path: Path) -> None:
    parser = OpenCodeParser(cwd=str(tmp_path))
    part = {
        "tool": "edit",
        "state": {"status": "error", "input": {"filePath": str(tmp_path / "a" / "b.py")}},
    }
    tool, result = parser.feed(json.dumps({"type": "tool_use", "part": part}))
    assert tool.data["files"] == ["a/b.py"] and tool.data["input"] == "a/b.py"
    assert result.data["ok"] is False


# --- launch --------------------------------------------------------------------------------


def turn(tmp_path: Path, **kw: object) -> Turn:
    return Turn(task_id="t1", prompt="-fix it", cwd=str(tmp_path), **kw)  # type: ignore[arg-type]


def test_first_turn_argv_env_and_quiet_switches(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    profile = Profile(
        name="oc",
        provider="opencode",
        binary="/bin/opencode",
        model="mock/mock-model",
        env={"XDG_CONFIG_HOME": str(xdg), "MOCK_KEY": "k"},
        config_dir=str(tmp_path / "account"),
    )
    launch = OpenCodeAdapter().launch(turn(tmp_path), profile)
    assert launch.argv == [
        "/bin/opencode",
        "run",
        "--format",
        "json",
        "--auto",
        "--print-logs",  # each failed model request logged on stderr, which the parser reads
        "--log-level",
        "ERROR",
        "-m",
        "mock/mock-model",
        "--title=Baton task t1",
    ]
    assert launch.stdin == "-fix it"  # the prompt goes on stdin, never in argv
    assert launch.env["MOCK_KEY"] == "k"
    assert agent_env(launch)["PWD"] == str(tmp_path)  # OpenCode takes $PWD as its project
    assert launch.env["OPENCODE_CONFIG_DIR"] == str(tmp_path / "account")
    assert QUIET_ENV.items() <= launch.env.items()
    assert launch.cwd == str(tmp_path)
    # both config folders were pre-filled so OpenCode does not npm-install its plugin
    for folder in (xdg / "opencode", tmp_path / "account"):
        lock = json.loads((folder / "package-lock.json").read_text())
        assert "@opencode-ai/plugin" in lock["packages"][""]["dependencies"]
        assert (folder / "node_modules").is_dir()


def test_resume_uses_the_session_and_turn_model(tmp_path: Path) -> None:
    profile = Profile(name="oc", provider="opencode", env={"HOME": str(tmp_path)})
    launch = OpenCodeAdapter().launch(
        turn(tmp_path, session_id="ses_1", model="p/m", reason="reply"), profile
    )
    assert launch.argv[:1] == ["opencode"]
    assert launch.argv[-4:] == ["-m", "p/m", "--session", "ses_1"]
    assert launch.stdin == "-fix it"
    assert not any(a.startswith("--title") for a in launch.argv)


def test_a_prompt_over_argv_limits_goes_on_stdin_whole(tmp_path: Path) -> None:
    prompt = 'say "hi"\n' + "é" * 300_000 + "\nTAIL\n"  # 600 KB, quotes and spaces kept as is
    profile = Profile(name="oc", provider="opencode", env={"HOME": str(tmp_path)})
    launch = OpenCodeAdapter().launch(Turn(task_id="t1", prompt=prompt, cwd=str(tmp_path)), profile)
    assert launch.stdin == prompt
    assert sum(len(a.encode()) for a in launch.argv) < 1000


def test_a_config_folder_the_user_set_up_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "node_modules").mkdir()
    assert seed_config_dir(tmp_path) is False
    assert not (tmp_path / "package-lock.json").exists()
    assert seed_config_dir(tmp_path / "fresh") is True


def test_config_dirs_follow_xdg_and_home() -> None:
    assert config_dirs({"HOME": "/h"}) == [Path("/h/.config/opencode")]
    found = config_dirs({"XDG_CONFIG_HOME": "/x", "OPENCODE_CONFIG_DIR": "/acct"})
    assert found == [Path("/x/opencode"), Path("/acct")]


def test_reply_stream_resumes_the_session_of_the_first_turn() -> None:
    # captured from the e2e reply: `opencode run --session ses_dd9267b5…` in the same worktree
    _, outcome = replay("opencode-reply.jsonl")
    assert outcome.session_id == "ses_dd9267b5effe7u0uxbMUmMe0Sv"
    assert outcome.completion == Completion.COMPLETED and outcome.answer == "Added a line."


# --- failures OpenCode logs on stderr only (a 500, a dead server) ------------------------------


def logged(at: str, error: str, small: bool = False) -> str:
    """A failed model request as OpenCode 1.18 logs it with ``--print-logs``."""
    return (
        f"timestamp=2026-12-01T13:00:{at}Z level=ERROR run=55b7abc2 "
        f'message="stream error" providerID=mock modelID=mock-model session.id={SESSION} '
        f'small={str(small).lower()} agent=build mode=primary error.error="{error}"'
    )


def stdout(kind: str, at: str) -> str:
    """A stdout event of OpenCode's at 13:00:``at`` (its timestamps are epoch ms)."""
    from datetime import datetime

    ms = int(datetime.fromisoformat(f"2026-12-01T13:00:{at}+00:00").timestamp() * 1000)
    part = {"reason": "tool-calls"} if kind == "step_finish" else {}
    return json.dumps({"type": kind, "timestamp": ms, "sessionID": SESSION, "part": part})


def test_failures_logged_in_a_row_stop_the_attempt_with_opencodes_words() -> None:
    parser = OpenCodeParser()
    assert isinstance(parser, StderrReader)  # so the runtime follows its stderr too
    error = "AI_APICallError: mock internal error"
    out = [e for i in range(MAX_FAILURES - 1) for e in parser.feed_stderr(logged(f"0{i}.5", error))]
    assert out == []  # OpenCode is still within its first retries
    out = parser.feed_stderr(logged("09.5", error))
    assert [(e.type, e.data["kind"], e.data["stop"]) for e in out] == [
        (EventType.ERROR, "worker_error", True)
    ]
    assert out[0].data["message"].startswith(error)
    assert f"{MAX_FAILURES} model requests in a row failed" in out[0].data["message"]
    assert parser.feed_stderr(logged("19.5", error)) == []  # said once
    assert parser.finish(-9, "") == []  # the stop error stands when the process is killed
    assert Outcome.fold(out).completion == Completion.WORKER_ERROR


def test_a_server_that_cannot_be_reached_is_a_network_error() -> None:
    parser = OpenCodeParser(max_failures=2)
    dead = "AI_APICallError: Cannot connect to API: The socket connection was closed unexpectedly"
    out = parser.feed_stderr(logged("01.0", dead)) + parser.feed_stderr(logged("03.0", dead))
    assert [e.data["kind"] for e in out] == ["network"]


def test_failures_with_progress_between_them_do_not_add_up() -> None:
    parser = OpenCodeParser(max_failures=2)
    error = "AI_APICallError: mock internal error"
    assert parser.feed_stderr(logged("01.0", error)) == []
    parser.feed(stdout("step_start", "02.0"))  # the retry got an answer going
    parser.feed(stdout("step_finish", "03.0"))
    assert parser.feed_stderr(logged("04.0", error)) == []  # one failure since the progress
    # stdout and stderr are read apart: a failure read late still counts by its own time
    assert parser.feed_stderr(logged("01.5", error)) == []
    assert [e.data["kind"] for e in parser.feed_stderr(logged("05.0", error))] == ["worker_error"]


def test_rate_limits_title_calls_and_other_log_lines_are_left_to_opencode() -> None:
    parser = OpenCodeParser(max_failures=1)
    assert parser.feed_stderr(logged("01.0", "AI_APICallError: Too Many Requests")) == []
    assert parser.feed_stderr(logged("02.0", "AI_APICallError: boom", small=True)) == []
    assert parser.feed_stderr('timestamp=2026-12-01T13:00:03Z level=ERROR message="other"') == []
    assert parser.feed_stderr("not a log line at all") == []
    assert [e.data["kind"] for e in parser.feed_stderr(logged("04.0", "boom"))] == ["worker_error"]
