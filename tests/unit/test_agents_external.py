"""The external adapter's parser: protocol lines → Baton's events, and what breaks the
protocol said rather than dropped."""

from __future__ import annotations

import json

from baton.agents.base import Turn
from baton.agents.external import ExternalAdapter, ExternalParser, start_line
from baton.config.profiles import Profile
from baton.core.events import EventType


def feed(*objs: object) -> tuple[ExternalParser, list[tuple[str, dict[str, object]]]]:
    p = ExternalParser()
    out = []
    for o in objs:
        line = o if isinstance(o, str) else json.dumps(o)
        out += [(str(e.type), e.data) for e in p.feed(line)]
    return p, out


def test_a_turn_maps_to_baton_events_in_order() -> None:
    p, got = feed(
        {"type": "session", "id": "s1"},
        {"type": "text", "text": "hi "},
        {"type": "tool", "name": "write", "files": ["a.py"]},
        {"type": "tool_result", "name": "write", "ok": False, "output": "denied"},
        {"type": "usage", "input": 10, "cached": 2, "output": 3},
        {"type": "final", "text": "done"},
    )
    assert [t for t, _ in got] == ["session", "text", "tool", "tool_result", "usage", "final"]
    assert got[2][1] == {"name": "write", "input": "a.py", "files": ["a.py"]}
    assert got[3][1]["ok"] is False
    assert (got[4][1]["input"], got[4][1]["cached"], got[4][1]["output"]) == (10, 2, 3)
    assert p.finish(0, "") == []


def test_what_breaks_the_protocol_is_said() -> None:
    p, got = feed("plain words", {"type": "nope"}, {"type": "final", "text": "x"}, {"type": "text"})
    assert [t for t, _ in got] == ["log", "log", "final", "log"]
    assert "not a protocol line: plain words" in str(got[0][1]["message"])
    assert "unknown protocol event 'nope'" in str(got[1][1]["message"])
    assert "after 'final'" in str(got[3][1]["message"])
    late = p.finish(3, "")
    assert [str(e.type) for e in late] == ["log"] and "code 3" in str(late[0].data["message"])


def test_an_end_is_required_and_error_kinds_are_checked() -> None:
    p, _ = feed({"type": "text", "text": "working"})
    (err,) = p.finish(1, "Traceback: boom")
    assert err.type == EventType.ERROR and err.data["kind"] == "worker_error"
    assert "no final, question or error" in err.data["message"] and "boom" in err.data["message"]
    _, got = feed({"type": "error", "kind": "rate_limit", "message": "slow", "retry_after": 5})
    assert got[0][1]["kind"] == "rate_limit" and got[0][1]["retry_after"] == 5.0
    _, got = feed({"type": "error", "kind": "completed", "message": "?"})
    assert got[0][1]["kind"] == "worker_error"  # not a kind a program may name


def test_the_start_line_carries_the_turn() -> None:
    turn = Turn("t1", "do it", "/w", reason="reply", session_id="s9", files=("a.py",))
    launch = ExternalAdapter().launch(
        turn, Profile(name="x", provider="external", options={"argv": ["prog", "-v"]})
    )
    assert launch.argv == ["prog", "-v"] and launch.cwd == "/w"
    assert launch.stdin == start_line(turn, None)
    start = json.loads(launch.stdin or "")
    assert (start["protocol"], start["session"], start["reason"]) == (1, "s9", "reply")
    assert start["files"] == ["a.py"] and start["prompt"] == "do it"
