"""The fake adapter: argv/env it builds, and its parser's mapping to Baton's events."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from baton.agents.base import Turn
from baton.agents.fake import FakeAdapter, FakeParser
from baton.agents.fake_script import BrokenScript, parse_script, script_for
from baton.config.profiles import Profile
from baton.core.events import EventType


def turn(tmp_path: Path, **kw: object) -> Turn:
    return Turn(
        task_id="t",
        prompt="do; rm -rf / `x` $(y)",
        cwd=str(tmp_path),
        task_dir=str(tmp_path / "task"),
        **kw,
    )  # type: ignore[arg-type]


def test_launch_writes_the_prompt_to_a_file_and_never_into_argv(tmp_path: Path) -> None:
    launch = FakeAdapter().launch(turn(tmp_path), Profile("fake", "fake"))
    assert launch.argv[:4] == [sys.executable, "-P", "-m", "baton.agents.fake_agent"]
    assert launch.argv[4] == "--prompt-file"
    prompt_file = Path(launch.argv[5])
    assert prompt_file.read_text() == "do; rm -rf / `x` $(y)"
    assert prompt_file.is_relative_to(tmp_path / "task")
    assert "--resume" not in launch.argv
    assert launch.env["BATON_TASK_DIR"] == str(tmp_path / "task")
    assert launch.cwd == str(tmp_path)
    assert all("rm -rf" not in a for a in launch.argv)


def test_launch_resumes_a_session_and_passes_model_and_script(tmp_path: Path) -> None:
    profile = Profile("fake", "fake", model="m1", env={"X": "1"}, options={"script": "/s.json"})
    launch = FakeAdapter().launch(turn(tmp_path, session_id="abc", reason="reply"), profile)
    assert launch.argv[-4:] == ["--resume", "abc", "--model", "m1"]
    assert launch.env["X"] == "1" and launch.env["BATON_FAKE_SCRIPT"] == "/s.json"
    again = FakeAdapter().launch(turn(tmp_path, session_id="abc", reason="reply"), profile)
    assert again.argv[5] != launch.argv[5]  # each turn has its own prompt file


def lines(*objs: object) -> list[str]:
    return [json.dumps(o) for o in objs]


def test_parser_maps_every_wire_event() -> None:
    parser = FakeParser()
    events = [
        e
        for line in lines(
            {"type": "session", "id": "s1", "model": None},
            {"type": "delta", "text": "hi"},
            {"type": "tool", "name": "rename", "path": "a", "paths": ["a", "b"]},
            {"type": "tool_result", "name": "rename", "ok": True, "output": "ok"},
            {"type": "usage", "input": 1, "output": 2, "cost": 0.5},
            {"type": "done", "result": "R"},
        )
        for e in parser.feed(line)
    ]
    assert [(e.type, e.data) for e in events] == [
        (EventType.SESSION, {"id": "s1", "model": None}),
        (EventType.TEXT, {"text": "hi", "delta": True}),
        (EventType.TOOL, {"name": "rename", "input": "a b", "files": ["a", "b"]}),
        (EventType.TOOL_RESULT, {"name": "rename", "ok": True, "output": "ok"}),
        (
            EventType.USAGE,
            {"input": 1, "cached": 0, "output": 2, "cost": 0.5, "cost_source": "reported"},
        ),
        (EventType.FINAL, {"text": "R"}),
    ]
    assert parser.finish(0, "") == []


def test_parser_maps_questions_and_errors_and_then_finish_adds_nothing() -> None:
    parser = FakeParser()
    (q,) = parser.feed(json.dumps({"type": "question", "text": "why?"}))
    assert (q.type, q.data) == (EventType.QUESTION, {"text": "why?"})
    assert parser.finish(0, "") == []
    parser = FakeParser()
    line = {"type": "error", "kind": "rate_limit", "message": "m", "resets_at": 9.0}
    (e,) = parser.feed(json.dumps(line))
    assert e.data == {"kind": "rate_limit", "message": "m", "retry_after": None, "resets_at": 9.0}
    assert parser.finish(1, "boom") == []


def test_finish_without_an_end_marker_is_a_worker_error_with_stderr() -> None:
    parser = FakeParser()
    parser.feed(json.dumps({"type": "delta", "text": "x"}))
    (e,) = parser.finish(139, "Segmentation fault\n")
    assert e.type == EventType.ERROR and e.data["kind"] == "worker_error"
    assert "139" in e.data["message"] and "Segmentation fault" in e.data["message"]
    (e,) = FakeParser().finish(None, "")
    assert "unknown exit status" in e.data["message"]


def test_parser_logs_lines_it_does_not_understand() -> None:
    parser = FakeParser()
    assert parser.feed("") == []
    (e,) = parser.feed("Traceback (most recent call last):")
    assert e.type == EventType.LOG and "unparsed" in e.data["message"]
    (e,) = parser.feed(json.dumps({"type": "mystery"}))
    assert e.type == EventType.LOG


def test_script_sources_env_then_fence_then_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fenced = 'x\n```baton-fake\n{"steps": [{"say": "fenced"}]}\n```\n'
    assert script_for(fenced)["steps"] == [{"say": "fenced"}]
    path = tmp_path / "s.json"
    path.write_text('{"steps": [{"say": "env"}]}')
    monkeypatch.setenv("BATON_FAKE_SCRIPT", str(path))
    assert script_for("plain")["steps"] == [{"say": "env"}]
    # A profile's script wins over a script its prompt quotes (a reviewer sees the brief).
    assert script_for(fenced)["steps"] == [{"say": "env"}]
    monkeypatch.delenv("BATON_FAKE_SCRIPT")
    assert script_for(fenced)["steps"] == [{"say": "fenced"}]
    assert script_for("\n  Hello there\nmore")["summary"] == "fake agent: Hello there"


@pytest.mark.parametrize(
    "step",
    [
        {"chunks": 2},
        {"say": "x", "chunks": 0},
        {"edit": "a"},
        {"rename": ["a"]},
        {"sleep": -1},
        {"rate_limit": {}},
        {"hang": False},
        {"crash": "3"},
        {"stream": 10, "rate": 0},
        {"usage": {"input": "many"}},
        {"error": {"kind": 3}},
        {"say": "x", "write": "y"},
    ],
)
def test_parse_script_refuses_bad_steps(step: dict[str, object]) -> None:
    with pytest.raises(BrokenScript):
        parse_script(json.dumps({"steps": [step]}))


def test_parse_script_accepts_every_documented_step() -> None:
    steps = [
        {"say": "x", "chunks": 2, "delay": 0.1},
        {"write": "a", "content": "c"},
        {"edit": "a", "old": "c", "new": "d"},
        {"append": "a", "text": "t"},
        {"delete": "a"},
        {"rename": ["a", "b"]},
        {"read": "b"},
        {"sleep": 0},
        {"ask": "q"},
        {"rate_limit": {"resets_in": 5}},
        {"rate_limit": {"retry_after": 5}},
        {"error": {"kind": "auth", "message": "m"}, "exit": 0},
        {"hang": True},
        {"crash": 3},
        {"spawn_sleeper": "p"},
        {"stream": 3, "rate": 10, "size": 8},
        {"usage": {"input": 1, "output": 2, "cost": 0.1}},
    ]
    assert parse_script(json.dumps({"steps": steps, "summary": "s"}))["steps"] == steps
