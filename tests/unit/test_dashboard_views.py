"""The dashboard's pure parts: timelines from state events, the per-worker table and its
days, a task's detail, the CSV; one-time tokens, sessions and the request checks."""

from __future__ import annotations

import csv
import io
from typing import Any

from websockets.datastructures import Headers

import baton.surfaces.dashboard.auth as auth
import baton.surfaces.dashboard.views as views
from baton.core.events import Event, EventType
from baton.core.lifecycle import TaskState
from baton.core.task import Task

DAY = 86400.0
T0 = 20_000 * DAY + 3600.0  # 01:00 UTC on some day


def moved(task_id: str, seq: int, ts: float, a: str, b: str) -> Event:
    return Event(EventType.STATE, {"from": a, "to": b}, task_id=task_id, seq=seq, ts=ts)


def task(tid: str = "t1", **kw: Any) -> Task:
    base: dict[str, Any] = {"id": tid, "instruction": "do it", "root": "/r", "created_at": T0}
    return Task(**(base | kw))


def test_a_timeline_has_one_segment_per_state_the_last_open_until_settled() -> None:
    t = task(state=TaskState.REVIEW)
    states = [
        moved("t1", 1, T0 + 1, "queued", "preparing"),
        moved("t1", 2, T0 + 3, "preparing", "running"),
        moved("t1", 5, T0 + 9, "running", "review"),
    ]
    segs = views.timeline(t, states, T0 + 20)
    assert [(s["state"], s["start"], s["end"]) for s in segs] == [
        ("queued", T0, T0 + 1),
        ("preparing", T0 + 1, T0 + 3),
        ("running", T0 + 3, T0 + 9),
        ("review", T0 + 9, None),
    ]
    applied = [*states, moved("t1", 6, T0 + 12, "review", "applied")]
    t = task(state=TaskState.APPLIED, settled_at=T0 + 12)
    last = views.timeline(t, applied, T0 + 20)[-1]
    assert (last["state"], last["phase"], last["start"], last["end"]) == (
        "applied", "settled", T0 + 12, T0 + 12
    )  # fmt: skip
    # Reopened: applied → review, the bar goes on.
    reopened = [*applied, moved("t1", 7, T0 + 15, "applied", "review")]
    segs = views.timeline(task(state=TaskState.REVIEW), reopened, T0 + 20)
    assert [s["phase"] for s in segs][-3:] == ["review", "settled", "review"]
    assert segs[-1]["end"] is None
    # No move yet: the state it is in, since it was made.
    (only,) = views.timeline(task(), [], T0 + 5)
    assert (only["state"], only["start"], only["end"]) == ("queued", T0, None)


def test_a_row_carries_times_usage_and_cut_instruction() -> None:
    usage = {"input": 10, "cached": 2, "output": 5, "cost": 0.5, "cost_source": "estimated"}
    t = task(
        state=TaskState.FAILED,
        settled_at=T0 + 30,
        instruction="x" * 1000,
        options={"usage": usage},
    )
    row = views.task_row(t, [moved("t1", 1, T0 + 2, "queued", "running")], T0 + 100)
    assert row["startedAt"] == T0 + 2 and row["settledAt"] == T0 + 30 and row["elapsed"] == 30
    assert len(row["instruction"]) == views.INSTRUCTION_CHARS
    assert row["usage"] == {
        "input": 10, "cached": 2, "output": 5, "tokens": 17, "cost": 0.5,
        "costSource": "estimated",
    }  # fmt: skip
    unsettled = views.task_row(task(state=TaskState.RUNNING), [], T0 + 100)
    assert "settledAt" not in unsettled and unsettled["elapsed"] == 100
    assert "usage" not in unsettled


def test_worker_rows_sum_per_worker_and_per_utc_day() -> None:
    def used(tokens: int, cost: float | None, source: str | None = None) -> dict[str, Any]:
        return {"usage": {"input": tokens, "output": 0, "cost": cost, "cost_source": source}}

    tasks = [
        task("a", worker="w1", created_at=T0 - DAY, options=used(10, 1.0, "reported")),
        task("b", worker="w1", created_at=T0, options=used(20, 2.0, "estimated")),
        task("c", worker="w2", created_at=T0, options=used(5, None)),
        task("d", worker="w1", created_at=T0 + 60, state=TaskState.RUNNING),
    ]
    rows = views.worker_rows(tasks, since=T0 - 2 * DAY, now=T0 + 120)
    assert [r["worker"] for r in rows] == ["w1", "w2"]
    w1, w2 = rows
    assert (w1["tasks"], w1["tokens"], w1["cost"], w1["costSource"]) == (3, 30, 3.0, "estimated")
    assert w1["states"] == {"queued": 2, "running": 1}
    assert [d["tasks"] for d in w1["days"]] == [0, 1, 2]  # three UTC days, oldest first
    assert [d.get("cost") for d in w1["days"]] == [None, 1.0, 2.0]
    assert "cost" not in w2 and w2["tokens"] == 5
    assert views.totals(tasks)["tokens"] == 35


def test_detail_pairs_tool_calls_with_results_and_keeps_checks_and_findings() -> None:
    t = task(state=TaskState.REVIEW, title="Fix it")
    finding = {"path": "a.py", "line": 3, "message": "off by one"}
    events = [
        moved("t1", 1, T0 + 1, "queued", "running"),
        Event(EventType.TEXT, {"text": "Looking. ", "delta": True}, "t1", 2, T0 + 2),
        Event(EventType.TOOL, {"name": "Edit", "files": ["a.py"]}, "t1", 3, T0 + 3),
        Event(EventType.TOOL_RESULT, {"name": "Edit", "ok": False}, "t1", 4, T0 + 4),
        Event(EventType.TOOL, {"name": "Bash", "input": "pytest"}, "t1", 5, T0 + 5),
        Event(EventType.TOOL, {"name": "Write", "files": ["b.py", "a.py"]}, "t1", 6, T0 + 6),
        Event(EventType.VERIFY, {"name": "tests", "passed": True, "exit": 0}, "t1", 7, T0 + 7),
        Event(
            EventType.REVIEW,
            {"worker": "critic", "verdict": "request_changes", "findings": [finding]},
            "t1",
            8,
            T0 + 8,
        ),
    ]
    d = views.detail(t, events, {"final": True, "files": []}, T0 + 10)
    assert [(x["name"], x.get("ok")) for x in d["tools"]] == [
        ("Edit", False), ("Bash", None), ("Write", None)
    ]  # fmt: skip
    assert d["files"] == ["a.py", "b.py"]
    assert d["checks"] == [{"name": "tests", "passed": True, "exit": 0}]
    assert d["review"][0]["findings"] == [finding]
    assert d["transcript"][0] == "# Fix it" and any("Looking." in x for x in d["transcript"])
    assert d["seq"] == 8 and "diff" not in d  # no files: no diff


def test_csv_has_a_row_per_task_with_tokens_and_cost() -> None:
    usage = {"input": 7, "cached": 1, "output": 3, "cost": 0.25, "cost_source": "reported"}
    rows = [
        views.task_row(task("a", title="A, with a comma", options={"usage": usage}), [], T0),
        views.task_row(task("b"), [], T0),
    ]
    parsed = list(csv.DictReader(io.StringIO(views.csv_text(rows))))
    assert list(parsed[0]) == list(views.CSV_COLUMNS)
    assert parsed[0]["title"] == "A, with a comma" and parsed[0]["total_tokens"] == "11"
    assert parsed[0]["cost_usd"] == "0.250000" and parsed[0]["cost_source"] == "reported"
    assert parsed[0]["created"].endswith("T01:00:00Z")
    assert parsed[1]["cost_usd"] == "" and parsed[1]["total_tokens"] == "0"


def test_a_one_time_token_is_traded_once_and_not_after_it_expires() -> None:
    passes = auth.Passes(ttl=10)
    token, expires = passes.issue(now=100.0)
    assert expires == 110.0 and not passes.spent(token)
    session = passes.redeem(token, now=105.0)
    assert session is not None and passes.session(session.id) == session
    assert passes.spent(token) and passes.redeem(token, now=105.0) is None
    late, _ = passes.issue(now=100.0)
    assert passes.redeem(late, now=111.0) is None and passes.spent(late)
    assert passes.redeem("made-up") is None and passes.session("made-up") is None
    assert passes.session(None) is None and passes.session("") is None
    other = passes.redeem(passes.issue()[0])
    assert other is not None and other.csrf != session.csrf
    for _ in range(auth.MAX_SESSIONS):  # the oldest sessions end past the cap
        passes.redeem(passes.issue()[0])
    assert passes.session(session.id) is None and passes.session(other.id) is None


def test_request_checks() -> None:
    def check(**h: str) -> int | None:
        headers = Headers(h)
        refused = auth.check_request(headers, "GET", 4321)
        return int(refused.status) if refused else None

    assert check(Host="127.0.0.1:4321") is None
    assert check(Host="127.0.0.1:4321", Origin="http://127.0.0.1:4321") is None
    assert check() == 400
    assert check(Host="localhost:4321") == 403
    assert check(Host="127.0.0.1:4322") == 403
    assert check(Host="attacker.example:4321") == 403
    assert check(Host="127.0.0.1:4321", Origin="http://localhost:4321") == 403
    assert check(Host="127.0.0.1:4321", Origin="null") == 403
    refused = auth.check_request(Headers(Host="127.0.0.1:4321"), "PUT", 4321)
    assert refused is not None and int(refused.status) == 405
    session = auth.Session("id", "csrf-token", 0.0)
    assert auth.check_csrf(Headers({auth.CSRF_HEADER: "csrf-token"}), session) is None
    assert auth.check_csrf(Headers({auth.CSRF_HEADER: "other"}), session) is not None
    assert auth.check_csrf(Headers(), session) is not None
    jar = Headers(Cookie="a=1; baton_dashboard_4321=secret")
    assert auth.cookie_of(jar, auth.cookie_name(4321)) == "secret"
    assert auth.cookie_of(jar, auth.cookie_name(9)) is None
    cookie = auth.set_cookie("n", session)
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and cookie.startswith("n=id;")


def test_a_framed_session_is_taken_only_from_its_header() -> None:
    passes = auth.Passes()
    framed = passes.redeem(passes.issue()[0], framed=True)
    cookie = passes.redeem(passes.issue()[0])
    assert framed is not None and framed.framed and cookie is not None and not cookie.framed
    assert passes.session(framed.id, framed=True) == framed
    assert passes.session(framed.id) is None  # a framed id is no cookie
    assert passes.session(cookie.id, framed=True) is None  # a cookie's id is no header
    # A framed token is spent by its first try like any other, framed or not.
    token = passes.issue()[0]
    assert passes.redeem(token, framed=True) is not None
    assert passes.redeem(token, framed=True) is None and passes.redeem(token) is None


def test_where_a_request_carries_a_framed_session() -> None:
    def framed(*pairs: tuple[str, str]) -> str | None:
        return auth.framed_id(Headers(list(pairs)))

    assert framed() is None
    assert framed(("Cookie", "baton_dashboard_1=x")) is None
    assert framed(("X-Baton-Session", " abc ")) == "abc"
    assert framed(("Sec-WebSocket-Protocol", "baton.dashboard, baton.session.abc")) == "abc"
    assert framed(("Sec-WebSocket-Protocol", "baton.dashboard")) is None
    # More than one, or both ways: matches no session.
    assert framed(("X-Baton-Session", "a"), ("X-Baton-Session", "b")) == ""
    assert framed(("X-Baton-Session", "a"), ("Sec-WebSocket-Protocol", "baton.session.a")) == ""
    assert framed(("Sec-WebSocket-Protocol", "baton.session.a, baton.session.b")) == ""
    assert framed(("X-Baton-Session", "")) == ""
