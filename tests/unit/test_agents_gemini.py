"""The Gemini CLI adapter: launch and replays of captured real streams (incl. retried deltas)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baton.agents.base import Turn
from baton.agents.gemini import (
    MAX_ATTEMPTS,
    STDIN_LIMIT,
    GeminiAdapter,
    GeminiParser,
    PromptTooLarge,
    TextReplay,
    api_error,
    forced_settings,
    overlay_home,
    skipped_reason,
)
from baton.config.profiles import Profile
from baton.core.events import Event, EventType
from baton.core.lifecycle import Completion
from baton.core.outcome import Outcome
from baton.process.spawn import agent_env

STREAMS = Path(__file__).resolve().parents[1] / "fixtures" / "streams"


def replay(name: str, exit_code: int | None = 0) -> tuple[list[Event], Outcome]:
    parser = GeminiParser()
    out: list[Event] = []
    for line in (STREAMS / name).read_text().splitlines():
        out += parser.feed(line)
    out += parser.finish(exit_code, "")
    return out, Outcome.fold(out)


def shown(evs: list[Event]) -> str:
    return "".join(e.data["text"] for e in evs if e.type == EventType.TEXT)


def test_write_stream() -> None:
    evs, outcome = replay("gemini-write.jsonl")
    assert [str(e.type) for e in evs] == [
        "session",
        "tool",
        "tool_result",
        "text",
        "text",
        "usage",
        "final",
    ]
    assert outcome.completion == Completion.COMPLETED
    assert outcome.session_id == "9a37bee6-fcec-4a14-913f-9d4fba44f3d6"
    assert outcome.answer == "Wrote hello.txt." == shown(evs)
    assert evs[1].data["name"] == "write_file" and evs[1].data["files"][0].endswith("hello.txt")
    assert evs[2].data["ok"] is True
    assert outcome.input_tokens == 24905 and outcome.output_tokens == 38


@pytest.mark.parametrize(
    ("name", "kind", "message"),
    [
        ("gemini-ratelimit.jsonl", Completion.RATE_LIMIT, "mock rate limited; limit resets at"),
        ("gemini-401.jsonl", Completion.AUTH, "401 mock invalid api key"),
        ("gemini-500.jsonl", Completion.WORKER_ERROR, "500 mock internal error"),
        ("gemini-dead.jsonl", Completion.NETWORK, "fetch failed sending request"),
        ("gemini-cut.jsonl", Completion.WORKER_ERROR, "stream was cut short (terminated)"),
        ("gemini-nofinish.jsonl", Completion.WORKER_ERROR, "Model stream ended without a finish"),
    ],
)
def test_failure_streams(name: str, kind: Completion, message: str) -> None:
    # Gemini exits 0 on a cut stream; the result event decides, not the exit code.
    _, outcome = replay(name, exit_code=0)
    assert outcome.completion == kind
    assert message in outcome.error_message


def test_rate_limit_reset_time_is_parsed() -> None:
    _, outcome = replay("gemini-ratelimit.jsonl", exit_code=173)
    assert outcome.resets_at == 1795950372.0


def test_retried_stream_deltas_are_shown_once() -> None:
    # The real capture: two attempts re-send "partial answer", " without finish".
    evs, _ = replay("gemini-nofinish.jsonl")
    assert shown(evs) == "partial answer without finish"
    evs, _ = replay("gemini-cut.jsonl")
    assert shown(evs) == "partial answer"


def test_text_replay_shows_what_a_retry_adds() -> None:
    text = TextReplay(detect=True)
    seen = [text.feed(d) for d in ("Hel", "lo", "Hel", "lo", " world")]
    assert seen == ["Hel", "lo", "", "", " world"] and text.shown == "Hello world"
    text.boundary()
    assert text.feed("Hel") == "Hel"  # a new block after a tool call is not a repeat


def test_text_replay_guess_that_was_wrong_shows_the_swallowed_text() -> None:
    text = TextReplay(detect=True)
    seen = [text.feed(d) for d in ("The", " cat. ", "The", " dog.")]
    assert seen == ["The", " cat. ", "", "The dog."]
    assert text.shown == "The cat. The dog."


def test_text_replay_after_explicit_restart_follows_a_divergent_retry() -> None:
    text = TextReplay()
    assert [text.feed(d) for d in ("ab", "cd")] == ["ab", "cd"]
    text.restart()
    assert [text.feed(d) for d in ("ab", "XY")] == ["", "XY"]
    assert text.shown == "abXY"


def test_no_result_is_a_worker_error_naming_stderr() -> None:
    parser = GeminiParser()
    parser.feed(json.dumps({"type": "init", "session_id": "s1", "model": "m"}))
    (err,) = parser.finish(1, "noise\nError: socket hang up\n")
    assert err.data["kind"] == "network" and "without a result" in err.data["message"]


def test_max_session_turns() -> None:
    parser = GeminiParser()
    parser.feed(
        json.dumps(
            {"type": "error", "severity": "error", "message": "Maximum session turns exceeded"}
        )
    )
    (err,) = parser.feed(json.dumps({"type": "result", "status": "error"}))
    assert err.data["kind"] == "max_turns"


def test_api_error_unwraps_the_server_json() -> None:
    raw = '[API Error: {"error":{"code":401,"message":"bad key","status":"UNAUTHENTICATED"}}]'
    assert api_error(raw) == ("bad key", 401)
    assert api_error("plain") == ("plain", None)


# --- launch --------------------------------------------------------------------------------


def test_launch_argv_env_and_quiet_system_settings(tmp_path: Path) -> None:
    system = tmp_path / "system.json"
    system.write_text(json.dumps({"general": {"maxAttempts": 3}, "privacy": {"x": 1}}))
    profile = Profile(
        name="g",
        provider="gemini",
        binary="/bin/gemini",
        model="gemini-2.5-flash",
        env={"GEMINI_API_KEY": "k", "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(system)},
        config_dir=str(tmp_path / "acct"),
    )
    t = Turn(task_id="t", prompt="-p sneaky", cwd=str(tmp_path), task_dir=str(tmp_path / "task"))
    launch = GeminiAdapter().launch(t, profile)
    assert launch.argv == [
        "/bin/gemini",
        "--output-format",
        "stream-json",
        "--approval-mode",
        "yolo",
        "--skip-trust",
        "-m",
        "gemini-2.5-flash",
        "--prompt=",
    ]
    assert launch.stdin == "-p sneaky"  # the prompt never goes in argv
    env = launch.env
    assert env["GEMINI_API_KEY"] == "k"
    assert env["GEMINI_TELEMETRY_ENABLED"] == "false"
    assert agent_env(launch)["PWD"] == str(tmp_path)  # what the CLI really gets
    system_file = Path(env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"])
    settings = json.loads(system_file.read_text())
    assert settings["general"] == {
        "maxAttempts": MAX_ATTEMPTS,  # Gemini's own retries are bounded by Baton
        "enableAutoUpdate": False,
        "enableAutoUpdateNotification": False,
    }
    assert settings["privacy"] == {"x": 1, "usageStatisticsEnabled": False}
    assert settings["telemetry"] == {"enabled": False}
    # Under the temp dir Gemini would skip that file: the same settings come through a
    # private home whose .gemini links the account's files.
    assert skipped_reason(system_file) is not None
    home = Path(env["GEMINI_CLI_HOME"])
    assert home == tmp_path / "task" / "gemini-home"
    user = json.loads((home / ".gemini" / "settings.json").read_text())
    assert user["general"]["maxAttempts"] == MAX_ATTEMPTS
    assert user["privacy"]["usageStatisticsEnabled"] is False
    assert (home / ".gemini" / "tmp").resolve() == tmp_path / "acct" / ".gemini" / "tmp"


def test_overlay_home_keeps_the_account_settings_and_links_its_logins(tmp_path: Path) -> None:
    account = tmp_path / "acct"
    (account / ".gemini").mkdir(parents=True)
    (account / ".gemini" / "oauth_creds.json").write_text("{}")
    (account / ".gemini" / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "oauth"}}, "privacy": {"a": 1}})
    )
    home = overlay_home(account, tmp_path / "task", forced_settings(2))
    dot = home / ".gemini"
    assert (dot / "oauth_creds.json").is_symlink()
    merged = json.loads((dot / "settings.json").read_text())
    assert merged["security"] == {"auth": {"selectedType": "oauth"}}
    assert merged["privacy"] == {"a": 1, "usageStatisticsEnabled": False}
    assert merged["general"]["maxAttempts"] == 2
    assert not (dot / "settings.json").is_symlink()  # the account's file is untouched
    overlay_home(account, tmp_path / "task", forced_settings(2))  # a second turn: same home


def test_skipped_reason_mirrors_gemini_rule(tmp_path: Path) -> None:
    world = tmp_path / "world"
    world.mkdir()
    world.chmod(0o777)
    file = world / "s.json"
    file.write_text("{}")
    reason = skipped_reason(file)
    assert reason is not None and ("writable" in reason or "not owned by root" in reason)


def test_a_failure_before_the_model_answered_leaves_no_session_to_resume() -> None:
    parser = GeminiParser()
    out = parser.feed(json.dumps({"type": "init", "session_id": "s1", "model": "m"}))
    assert out == []
    err = {"message": "[API Error: 429 Too Many Requests]"}
    out = parser.feed(json.dumps({"type": "result", "status": "error", "error": err}))
    outcome = Outcome.fold(out)
    assert outcome.session_id is None and outcome.error == Completion.RATE_LIMIT


def test_a_resumed_session_gemini_no_longer_has_is_marked_session_lost() -> None:
    parser = GeminiParser()
    (event,) = parser.finish(42, "No previous sessions found for this project.\n")
    assert event.data["kind"] == "worker_error" and event.data["session_lost"] is True


def test_a_429_in_a_folder_name_is_not_a_rate_limit() -> None:
    parser = GeminiParser()
    tail = "Error: could not read /home/u/proj-429/too-many-requests/x.json\n"
    (event,) = parser.finish(1, tail)
    assert event.data["kind"] == "worker_error"
    (event,) = GeminiParser().finish(1, 'x\n{"error": {"code": 401, "message": "m"}}\n')
    assert event.data["kind"] == "auth"


def test_resume(tmp_path: Path) -> None:
    t = Turn(task_id="t", prompt="more", cwd=str(tmp_path), session_id="abc", reason="reply")
    argv = GeminiAdapter().launch(t, Profile(name="g", provider="gemini")).argv
    assert argv[0] == "gemini" and argv[-3:] == ["--resume", "abc", "--prompt="]
    assert "-m" not in argv


def test_a_prompt_over_argv_limits_goes_on_stdin_whole(tmp_path: Path) -> None:
    prompt = "é" * 300_000 + "\nTAIL\n"  # 600 KB: over one argv string's 128 KiB
    t = Turn(task_id="t", prompt=prompt, cwd=str(tmp_path), task_dir=str(tmp_path / "task"))
    launch = GeminiAdapter().launch(t, Profile(name="g", provider="gemini"))
    assert launch.stdin == prompt
    assert sum(len(a.encode()) for a in launch.argv) < 1000


def test_a_prompt_gemini_would_cut_is_refused_before_anything_starts(tmp_path: Path) -> None:
    task = tmp_path / "task"
    t = Turn(task_id="t", prompt="x" * (STDIN_LIMIT + 1), cwd=str(tmp_path), task_dir=str(task))
    with pytest.raises(PromptTooLarge, match=f"{STDIN_LIMIT + 1} bytes.*at most {STDIN_LIMIT}"):
        GeminiAdapter().launch(t, Profile(name="g", provider="gemini"))
    assert not task.exists()  # refused before writing the settings file
    fits = Turn(task_id="t", prompt="x" * STDIN_LIMIT, cwd=str(tmp_path), task_dir=str(task))
    assert GeminiAdapter().launch(fits, Profile(name="g", provider="gemini")).stdin == fits.prompt
    assert issubclass(PromptTooLarge, OSError)  # the supervisor fails the task with its message


def test_reply_stream_resumes_the_session_of_the_first_turn() -> None:
    # captured from the e2e reply: `gemini --resume 3608a4af-…` repeats the session id in init
    _, outcome = replay("gemini-reply.jsonl")
    assert outcome.session_id == "3608a4af-9ed5-46c1-abd7-f0bcb9bc0915"
    assert outcome.completion == Completion.COMPLETED and outcome.answer == "Added a line."
