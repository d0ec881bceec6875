"""The dashboard as a browser meets it: a real `baton serve`, `baton dashboard` for the link,
real HTTP over loopback (http.client) and the live socket (websockets' client).

The one-time link is traded once for an HttpOnly SameSite=Strict cookie; a wrong Host or
Origin, no cookie, a replayed link, a POST without the CSRF token or while actions are off
are refused; a framed page's link (``&framed=1``) is traded for a session in the page itself,
sent back as ``X-Baton-Session`` (the live socket: a subprotocol), with the same refusals
(no header, a wrong one, a replayed link, its header from another origin) and its id never
in a cookie, a URL, a Referer or the broker's debug log; the snapshot, a task's detail and
the CSV hold 20 fake-agent tasks of three workers as the store has them; the live socket
pushes a streaming task's events and rows.
"""

from __future__ import annotations

import csv
import http.client
import io
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import psutil
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Origin, Subprotocol

from baton.surfaces.dashboard.server import STATIC
from tests.conftest import fake_script, git, user_config
from tests.e2e.test_cli import as_json, baton, stop_brokers

WORKERS = ("fa", "fb", "fc")
PROFILES = (
    '[profiles.fa]\nprovider = "fake"\n'
    '[profiles.fb]\nprovider = "fake"\nmodel = "claude-sonnet-4-5"\n'
    '[profiles.fc]\nprovider = "fake"\n'
)
CHECK = '[[verify]]\nname = "ok"\nargv = ["true"]\n'


@pytest.fixture(autouse=True)
def _stop_brokers(baton_home: Path, tmp_path: Path) -> Iterator[None]:
    yield
    stop_brokers(tmp_path / "run" / "baton")


@dataclass
class Page:
    """A browser's session with one broker's dashboard."""

    port: int
    cookie: str  # "name=value"
    csrf: str = ""

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def origin(self) -> str:
        return f"http://{self.host}"


def request(
    port: int, method: str, path: str, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One HTTP request over loopback: status, headers (last of each), body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        given = {"Host": f"127.0.0.1:{port}", **(headers or {})}
        conn.request(method, path, headers={k: v for k, v in given.items() if v is not None})
        res = conn.getresponse()
        return res.status, {k: v for k, v in res.getheaders()}, res.read()
    finally:
        conn.close()


def get(page: Page, path: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    return request(page.port, "GET", path, {"Cookie": page.cookie, **headers})


def get_json(page: Page, path: str) -> Any:
    status, _, body = get(page, path)
    assert status == 200, body
    return json.loads(body)


def link() -> str:
    made = baton("dashboard", "--print-url")
    assert made.returncode == 0, made.stderr
    url = made.stdout.strip()
    assert url.startswith("http://127.0.0.1:") and "/dashboard/?t=" in url, url
    return url


def open_page(url: str) -> Page:
    """What the browser does with the link: trade it for the cookie, follow the redirect."""
    parts = urlsplit(url)
    assert parts.port is not None
    status, headers, _ = request(parts.port, "GET", f"{parts.path}?{parts.query}")
    assert status == 303 and headers["Location"] == "/dashboard/", (status, headers)
    cookie = headers["Set-Cookie"]
    pair, *flags = [f.strip() for f in cookie.split(";")]
    assert pair.startswith(f"baton_dashboard_{parts.port}=")
    assert set(flags) == {"Path=/dashboard", "HttpOnly", "SameSite=Strict"}, cookie
    # The cookie's page is never framed: another page on 127.0.0.1 (the same site, whatever
    # its port) could frame it with the cookie and trick clicks.
    status, headers, _ = request(parts.port, "GET", "/dashboard/", {"Cookie": pair})
    assert status == 200 and "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert headers["X-Frame-Options"] == "DENY"
    return Page(parts.port, pair)


def serve(repo: Path, log: IO[str] | None = None, **env: str) -> subprocess.Popen[str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "baton.cli", "serve", "--root", str(repo), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if log is None else log,
        text=True,
        env={**os.environ, "COLUMNS": "200", **env},
    )
    assert server.stdout is not None
    assert json.loads(server.stdout.readline())["url"].startswith("ws://127.0.0.1:")
    return server


def wait_for(page: Page, done: Any, timeout: float = 240.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        snap = get_json(page, "/dashboard/api/snapshot?window=1h")
        if done(snap):
            return dict(snap)
        assert time.monotonic() < deadline, [(t["id"], t["state"]) for t in snap["tasks"]]
        time.sleep(0.5)


def script(i: int) -> str:
    usage: dict[str, Any] = {"input": 100 + i, "output": 10 + i, "cached": 5}
    worker = WORKERS[i % 3]
    if worker == "fa":
        usage["cost"] = 0.01  # the CLI's own figure: reported
    return fake_script(
        {"say": f"task {i} says hello. ", "chunks": 2},
        {"write": f"f{i}.txt", "content": f"file {i}\n"},
        {"usage": usage},
        summary=f"wrote f{i}.txt",
    )


def number(row: dict[str, Any]) -> int:
    """Which of the 20 scripts a task's row is (its instruction says)."""
    return int(row["instruction"].split('"say": "task ')[1].split()[0])


def test_twenty_tasks_of_three_workers_in_snapshot_detail_and_csv(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    user_config(tmp_path, PROFILES + CHECK)
    server = serve(repo)
    try:
        nodes = [
            {"key": f"n{i}", "instruction": script(i), "worker": WORKERS[i % 3]} for i in range(20)
        ]
        (tmp_path / "graph.json").write_text(json.dumps(nodes))
        made = baton("graph", str(tmp_path / "graph.json"), "--cwd", str(repo), "--json")
        assert made.returncode == 0, made.stderr
        page = open_page(link())
        snap = wait_for(
            page,
            lambda s: len(s["tasks"]) == 20 and all(t["state"] == "review" for t in s["tasks"]),
        )
        tasks = {t["id"]: t for t in snap["tasks"]}
        listed = as_json(baton("tasks", "--json", "--limit", "100"))
        assert set(tasks) == {t["id"] for t in listed}
        assert snap["window"] == "1h" and snap["csrf"] and snap["actions"] is False
        assert [t["createdAt"] for t in snap["tasks"]] == sorted(
            (t["createdAt"] for t in snap["tasks"]), reverse=True
        )
        for t in snap["tasks"]:
            i = number(t)
            assert t["worker"] == WORKERS[i % 3]
            phases = [s["phase"] for s in t["timeline"]]
            assert phases == ["queued", "preparing", "running", "verifying", "review"], phases
            assert t["timeline"][-1]["end"] is None and t["startedAt"] >= t["createdAt"]
            for a, b in zip(t["timeline"], t["timeline"][1:], strict=False):
                assert a["end"] == b["start"] and a["start"] <= a["end"]
            u = t["usage"]
            assert (u["input"], u["cached"], u["output"]) == (100 + i, 5, 10 + i)
            assert u["tokens"] == 115 + 2 * i
            want_source = {"fa": "reported", "fb": "estimated", "fc": None}[t["worker"]]
            assert u.get("costSource") == want_source, (t["worker"], u)
            if want_source == "reported":
                assert u["cost"] == pytest.approx(0.01)
            if want_source == "estimated":  # the shipped price of claude-sonnet-4-5
                assert u["cost"] == pytest.approx((100 + i) * 3e-6 + 5 * 0.3e-6 + (10 + i) * 15e-6)
        by_worker = {w["worker"]: w for w in snap["workers"]}
        assert set(by_worker) == set(WORKERS)
        assert [by_worker[w]["tasks"] for w in WORKERS] == [7, 7, 6]
        for w in WORKERS:
            mine = [t for t in snap["tasks"] if t["worker"] == w]
            assert by_worker[w]["tokens"] == sum(t["usage"]["tokens"] for t in mine)
            assert by_worker[w]["states"] == {"review": len(mine)}
            assert by_worker[w]["days"][-1]["tasks"] == len(mine)
        assert "cost" not in by_worker["fc"]
        assert by_worker["fa"]["cost"] == pytest.approx(0.07)
        assert snap["totals"]["tasks"] == 20
        assert snap["totals"]["tokens"] == sum(t["usage"]["tokens"] for t in snap["tasks"])

        some = snap["tasks"][3]
        i = number(some)
        detail = get_json(page, f"/dashboard/api/tasks/{some['id']}")
        assert detail["task"]["id"] == some["id"]
        text = "\n".join(detail["transcript"])
        assert f"task {i} says hello." in text and "check **ok** passed" in text
        assert detail["files"] == [f"f{i}.txt"]
        assert [(c["name"], c["passed"]) for c in detail["checks"]] == [("ok", True)]
        assert any(tool["files"] == [f"f{i}.txt"] and tool["ok"] for tool in detail["tools"])
        (changed,) = detail["diff"]["files"]
        assert changed["path"] == f"f{i}.txt" and changed["hunks"][0]["newText"] == f"file {i}\n"
        events = as_json(baton("inspect", "--json", some["id"], "--detail", "events"))
        assert detail["seq"] == events["detail"]["eventCount"]
        assert get(page, "/dashboard/api/tasks/nosuchtask")[0] == 404

        status, headers, body = get(page, "/dashboard/api/export.csv?window=24h")
        assert status == 200 and headers["Content-Type"].startswith("text/csv")
        assert 'filename="baton-tasks-24h.csv"' in headers["Content-Disposition"]
        rows = list(csv.DictReader(io.StringIO(body.decode())))
        assert [r["id"] for r in rows] == [t["id"] for t in snap["tasks"]]
        for r in rows:
            t = tasks[r["id"]]
            assert r["worker"] == t["worker"] and r["state"] == "review"
            assert int(r["input_tokens"]) == t["usage"]["input"]
            assert int(r["total_tokens"]) == t["usage"]["tokens"]
            assert r["cost_source"] == (t["usage"].get("costSource") or "")
            assert r["created"].endswith("Z")
        assert get(page, "/dashboard/api/snapshot?window=2h")[0] == 400
    finally:
        server.terminate()
        server.wait(10)


def test_refusals(baton_home: Path, repo: Path) -> None:
    server = serve(repo)
    try:
        url = link()
        parts = urlsplit(url)
        port = parts.port
        assert port is not None
        token_path = f"{parts.path}?{parts.query}"
        # A wrong Host (DNS rebinding) or Origin is refused before the token is looked at,
        # and does not spend it.
        assert request(port, "GET", token_path, {"Host": f"evil.example:{port}"})[0] == 403
        assert request(port, "GET", token_path, {"Host": f"localhost:{port + 1}"})[0] == 403
        assert request(port, "GET", token_path, {"Origin": "http://evil.example"})[0] == 403
        page = open_page(url)
        # The link works once.
        status, _, body = request(port, "GET", token_path)
        assert status == 403 and b"used already" in body
        assert request(port, "GET", token_path, {"Cookie": page.cookie})[0] == 403
        assert request(port, "GET", "/dashboard/?t=made-up")[0] == 403
        # Every request needs the cookie.
        for path in ("/dashboard/", "/dashboard/api/snapshot", "/dashboard/api/export.csv"):
            assert request(port, "GET", path)[0] == 401, path
            assert request(port, "GET", path, {"Cookie": f"baton_dashboard_{port}=x"})[0] == 401
            assert get(page, path)[0] == 200, path
            assert get(page, path, Origin="http://evil.example")[0] == 403
            assert get(page, path, Origin="null")[0] == 403
            assert get(page, path, Host=f"localhost:{port}")[0] == 403
            assert get(page, path, Origin=page.origin)[0] == 200
        status, headers, body = get(page, "/dashboard/")
        assert headers["Content-Type"].startswith("text/html") and b"<html" in body
        assert headers["Cache-Control"] == "no-store"
        assert "default-src 'self'" in headers["Content-Security-Policy"]
        assert get(page, "/dashboard/static/../server.py")[0] == 404
        assert get(page, "/dashboard/static/%2e%2e/server.py")[0] == 404
        assert request(port, "DELETE", "/dashboard/", {"Cookie": page.cookie})[0] == 405
        # The live socket: same cookie and Origin checks.
        live = f"ws://127.0.0.1:{port}/dashboard/live"
        for headers_, origin in (({}, page.origin), ({"Cookie": page.cookie}, "http://evil")):
            with pytest.raises(InvalidStatus) as refused:
                connect(live, additional_headers=headers_, origin=Origin(origin), open_timeout=10)
            assert refused.value.response.status_code in (401, 403)
        # The agents' websocket still refuses the page's own origin.
        info = as_json(baton("health", "--json"))
        with pytest.raises(InvalidStatus) as agents:
            connect(info["url"], origin=Origin(page.origin), open_timeout=10)
        assert agents.value.response.status_code == 403
        # Actions: the CSRF token, then the setting.
        page.csrf = get_json(page, "/dashboard/api/snapshot")["csrf"]
        act = "/dashboard/api/tasks/nosuchtask/cancel"
        base = {"Cookie": page.cookie, "Origin": page.origin}
        assert request(port, "POST", act, base)[0] == 403
        assert request(port, "POST", act, {**base, "X-Baton-CSRF": "wrong"})[0] == 403
        assert request(port, "POST", act, {"X-Baton-CSRF": page.csrf})[0] == 401
        status, _, body = request(port, "POST", act, {**base, "X-Baton-CSRF": page.csrf})
        assert status == 403 and b"actions are off" in body
        other = open_page(link())  # a second session has a CSRF token of its own
        other.csrf = get_json(other, "/dashboard/api/snapshot")["csrf"]
        assert other.csrf != page.csrf
        assert request(port, "POST", act, {**base, "X-Baton-CSRF": other.csrf})[0] == 403
    finally:
        server.terminate()
        server.wait(10)


def receive_until(ws: ClientConnection, done: Any, timeout: float = 90.0) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while not done(got):
        left = deadline - time.monotonic()
        assert left > 0, got[-5:]
        got.append(json.loads(ws.recv(timeout=left)))
    return got


def test_live_pushes_and_actions_when_enabled(baton_home: Path, repo: Path, tmp_path: Path) -> None:
    server = serve(repo)
    try:
        page = open_page(link())
        with connect(
            f"ws://127.0.0.1:{page.port}/dashboard/live",
            additional_headers={"Cookie": page.cookie},
            origin=Origin(page.origin),
            open_timeout=10,
        ) as ws:
            assert json.loads(ws.recv(timeout=10))["type"] == "hello"
            streaming = fake_script(
                {"say": "one two three four five six. ", "chunks": 6, "delay": 0.2},
                {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
            )
            task_id = baton("delegate", "--cwd", str(repo), streaming).stdout.strip()
            ws.send(json.dumps({"follow": [task_id]}))  # its transcript, as the page shows it

            def reviewed(got: list[dict[str, Any]]) -> bool:
                return any(
                    m["type"] == "tasks"
                    and any(t["id"] == task_id and t["state"] == "review" for t in m["tasks"])
                    for m in got
                )

            got = receive_until(ws, reviewed)
            # Every stored event arrives, once, in order (the last ones may still come).
            stored = as_json(baton("inspect", "--json", task_id, "--detail", "events"))
            count = stored["detail"]["eventCount"]

            def mine_of(got: list[dict[str, Any]]) -> list[dict[str, Any]]:
                events = [e for m in got if m["type"] == "events" for e in m["events"]]
                return [e for e in events if e["taskId"] == task_id]

            got += receive_until(ws, lambda more: len(mine_of(got + more)) >= count)

            def transcript_of(got: list[dict[str, Any]]) -> tuple[int, list[str]]:
                lines: list[str] = []
                seq = 0
                for m in got:
                    if m["type"] == "transcript" and m["taskId"] == task_id:
                        lines = lines[: m["start"]] + m["lines"]
                        seq = m["seq"]
                return seq, lines

            got += receive_until(ws, lambda more: transcript_of(got + more)[0] >= count, 30)
            ws.send(json.dumps({"follow": ["nosuchtask0"]}))
            (refused,) = receive_until(ws, lambda more: any(m["type"] == "error" for m in more))[
                -1:
            ]
            assert refused["taskId"] == "nosuchtask0"
        pieces = [m for m in got if m["type"] == "transcript"]
        assert len(pieces) >= 2 and pieces[0]["start"] == 0  # whole first, then what changed
        shown = as_json(baton("inspect", "--json", "--transcript", task_id))
        assert transcript_of(got) == (shown["seq"], shown["lines"])
        assert any("one two three four five six." in line for line in shown["lines"])
        mine = mine_of(got)
        assert [e["seq"] for e in mine] == list(range(1, count + 1))
        assert len([e for e in mine if e["type"] == "text"]) >= 6
        by_seq = {e["seq"]: e for e in stored["detail"]["events"]}
        assert all(by_seq[e["seq"]]["type"] == e["type"] for e in mine if e["seq"] in by_seq)
        # The text arrived over several frames, as it was written, not all at the end.
        frames_with_text = [
            m
            for m in got
            if m["type"] == "events" and any(e["type"] == "text" for e in m["events"])
        ]
        assert len(frames_with_text) >= 2
        rows = [t for m in got if m["type"] == "tasks" for t in m["tasks"] if t["id"] == task_id]
        assert rows[-1]["timeline"][-1]["state"] == "review"

        # Actions on: reject from the page, then a cancel the state refuses (409).
        user_config(tmp_path, "[dashboard]\nactions = true\n")
        page.csrf = get_json(page, "/dashboard/api/snapshot")["csrf"]
        assert get_json(page, "/dashboard/api/snapshot")["actions"] is True
        post = {"Cookie": page.cookie, "Origin": page.origin, "X-Baton-CSRF": page.csrf}
        status, _, body = request(page.port, "POST", f"/dashboard/api/tasks/{task_id}/reject", post)
        assert status == 200, body
        answer = json.loads(body)
        assert answer["task"]["state"] == "rejected" and len(answer["rejected"]) == 1
        status, _, body = request(page.port, "POST", f"/dashboard/api/tasks/{task_id}/cancel", post)
        assert status == 409 and "next" in json.loads(body)
        assert (repo / "app.py").read_text().startswith("def a():\n    return 1\n")
        assert git(repo, "status", "--porcelain") == ""
    finally:
        server.terminate()
        server.wait(10)


def test_an_open_page_keeps_a_broker_started_on_demand(
    baton_home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`baton dashboard` starts a broker like any command; it stays while the page's live
    socket is open, and exits once idle after the page closes."""
    monkeypatch.setenv("BATON_IDLE_EXIT", "2")
    made = baton("dashboard", "--json", "--no-open", cwd=repo)
    assert made.returncode == 0, made.stderr
    answer = json.loads(made.stdout)
    assert answer["opened"] is False and answer["actions"] is False
    assert answer["expires"] > time.time() + 60
    pid = as_json(baton("health", "--json", cwd=repo))["pid"]
    page = open_page(answer["url"])
    with connect(
        f"ws://127.0.0.1:{page.port}/dashboard/live",
        additional_headers={"Cookie": page.cookie},
        origin=Origin(page.origin),
        open_timeout=10,
    ) as ws:
        assert json.loads(ws.recv(timeout=10))["type"] == "hello"
        time.sleep(5)  # more than twice the idle time
        assert psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"
    deadline = time.monotonic() + 20
    while psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie":
        assert time.monotonic() < deadline, "the broker did not exit once the page closed"
        time.sleep(0.1)


@dataclass
class Framed:
    """A framed page's session: its id, sent as a header (no cookie)."""

    port: int
    session: str

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
        return request(self.port, "GET", path, {"X-Baton-Session": self.session, **headers})

    def live(self, session: str | None = None, origin: str | None = None) -> ClientConnection:
        return connect(
            f"ws://127.0.0.1:{self.port}/dashboard/live",
            origin=Origin(origin or self.origin),
            subprotocols=[Subprotocol("baton.dashboard")]
            + ([] if session == "" else [Subprotocol(f"baton.session.{session or self.session}")]),
            open_timeout=10,
        )


def open_framed(url: str) -> Framed:
    """What the editor's panel does with the link: frame ``url&framed=1``; the page comes
    back with its session id inside, no cookie set and no redirect."""
    parts = urlsplit(url)
    assert parts.port is not None
    status, headers, body = request(parts.port, "GET", f"{parts.path}?{parts.query}&framed=1")
    assert status == 200, (status, body)
    assert "Set-Cookie" not in headers and "Location" not in headers, headers
    assert headers["Content-Type"].startswith("text/html")
    assert headers["Cache-Control"] == "no-store" and headers["Referrer-Policy"] == "no-referrer"
    assert "frame-ancestors" not in headers["Content-Security-Policy"]  # the panel frames it
    assert "X-Frame-Options" not in headers
    (session,) = re.findall(rb'<meta name="baton-session" content="([A-Za-z0-9_-]{40,})">', body)
    return Framed(parts.port, session.decode())


def test_framed_sessions_and_their_refusals(baton_home: Path, repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "broker.log"
    with log.open("w") as out:
        server = serve(repo, out, BATON_LOG="debug")
    try:
        url = link()
        parts = urlsplit(url)
        port = parts.port
        assert port is not None
        framed_path = f"{parts.path}?{parts.query}&framed=1"
        # The framed link meets the same Host and Origin checks, which do not spend it.
        assert request(port, "GET", framed_path, {"Host": f"localhost:{port}"})[0] == 403
        assert request(port, "GET", framed_path, {"Origin": "http://evil.example"})[0] == 403
        assert request(port, "GET", framed_path, {"Origin": "vscode-webview://x"})[0] == 403
        page = open_framed(url)
        # The link works once, framed or not.
        status, _, body = request(port, "GET", framed_path)
        assert status == 403 and b"used already" in body
        assert request(port, "GET", f"{parts.path}?{parts.query}")[0] == 403
        cookie_page = open_page(link())
        wrong = page.session[:-4] + ("AAAA" if not page.session.endswith("AAAA") else "BBBB")
        for path in ("/dashboard/", "/dashboard/api/snapshot", "/dashboard/api/export.csv"):
            assert page.get(path)[0] == 200, path
            assert page.get(path, Origin=page.origin)[0] == 200, path
            assert request(port, "GET", path)[0] == 401, path  # no header
            assert request(port, "GET", path, {"X-Baton-Session": wrong})[0] == 401, path
            assert request(port, "GET", path, {"X-Baton-Session": ""})[0] == 401, path
            # Its header from another origin, or through another Host name: refused.
            assert page.get(path, Origin="http://evil.example")[0] == 403, path
            assert page.get(path, Origin="null")[0] == 403, path
            assert page.get(path, Host=f"localhost:{port}")[0] == 403, path
            # A session is only taken the way it was handed out: a framed id is no cookie,
            # a cookie's id no header, and a wrong header is not saved by a good cookie.
            framed_cookie = f"baton_dashboard_{port}={page.session}"
            assert request(port, "GET", path, {"Cookie": framed_cookie})[0] == 401, path
            cookie_id = cookie_page.cookie.split("=", 1)[1]
            assert request(port, "GET", path, {"X-Baton-Session": cookie_id})[0] == 401, path
            both = {"X-Baton-Session": wrong, "Cookie": cookie_page.cookie}
            assert request(port, "GET", path, both)[0] == 401, path
        status, headers, body = page.get("/dashboard/api/export.csv?window=1h")
        assert status == 200 and headers["Content-Type"].startswith("text/csv")
        assert body.startswith(b"id,title,worker,")
        # The page's code is answered without a session (it holds no data), to its own
        # origin only.
        status, headers, body = request(port, "GET", "/dashboard/static/index.html")
        assert status == 200 and b"baton-session" not in body
        for name in os.listdir(STATIC):
            if not name.endswith(".html"):
                status, headers, _ = request(port, "GET", f"/dashboard/static/{name}")
                assert status == 200 and headers["Cross-Origin-Resource-Policy"] == "same-origin"
        static = "/dashboard/static/dashboard.js"
        assert request(port, "GET", static, {"Origin": "http://evil.example"})[0] == 403
        assert request(port, "GET", static, {"Host": f"localhost:{port}"})[0] == 403
        # The live socket: the session as a subprotocol, the same Origin check.
        with page.live() as ws:
            assert ws.subprotocol == "baton.dashboard"
            assert json.loads(ws.recv(timeout=10))["type"] == "hello"
        for session, origin in (("", None), (wrong, None), (None, "http://evil.example")):
            with pytest.raises(InvalidStatus) as refused:
                page.live(session, origin).close()
            assert refused.value.response.status_code == (403 if origin else 401)
        # Actions: the CSRF token of its own session, then the setting.
        csrf = json.loads(page.get("/dashboard/api/snapshot")[2])["csrf"]
        cookie_csrf = get_json(cookie_page, "/dashboard/api/snapshot")["csrf"]
        assert csrf != cookie_csrf
        act = "/dashboard/api/tasks/nosuchtask/cancel"
        base = {"X-Baton-Session": page.session, "Origin": page.origin}
        assert request(port, "POST", act, base)[0] == 403
        assert request(port, "POST", act, {**base, "X-Baton-CSRF": cookie_csrf})[0] == 403
        assert request(port, "POST", act, {"X-Baton-CSRF": csrf, "Origin": page.origin})[0] == 401
        evil = {**base, "X-Baton-CSRF": csrf, "Origin": "http://evil.example"}
        assert request(port, "POST", act, evil)[0] == 403
        status, _, body = request(port, "POST", act, {**base, "X-Baton-CSRF": csrf})
        assert status == 403 and b"actions are off" in body
    finally:
        server.terminate()
        server.wait(10)
    # The broker logged at debug level all along, and no session id is in it.
    logged = log.read_text()
    assert " DEBUG " in logged, logged[-2000:]
    assert page.session not in logged and cookie_page.cookie.split("=", 1)[1] not in logged
