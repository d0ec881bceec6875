"""Hypothesis throws thousands of malformed frames at the websocket endpoint: each one is
answered with a JSON-RPC error (or the connection is closed), and the broker stays healthy.

The broker (a real Supervisor and endpoint) runs on its own event loop in a thread; the test
talks to it with websockets' synchronous client.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from baton.config.profiles import default_profiles
from baton.runtime.supervisor import Supervisor
from baton.surfaces.ws.endpoint import Endpoint, EndpointLimits, start_endpoint
from tests.conftest import fake_script
from tests.e2e.test_ws_endpoint import pushed

WORKER = "fuzz-proof-worker"
FRAMES_PER_EXAMPLE = 25
EXAMPLES = 120  # 3,000 frames
METHODS = [
    "delegate", "tasks", "inspect", "get", "diff", "accept", "reject", "reply", "steer",
    "cancel", "retry", "events", "memory", "workers", "health", "watch", "unsubscribe", "auth",
]  # fmt: skip

json_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=6,
)
params = st.dictionaries(
    st.sampled_from(
        [
            "id",
            "ids",
            "text",
            "instruction",
            "cwd",
            "state",
            "limit",
            "hunks",
            "op",
            "worker",
            "scope",
            "targets",
            "since",
            "subscription",
            "x",
        ]
    ),
    json_value,
    max_size=4,
)
request = st.fixed_dictionaries(
    {
        "jsonrpc": st.sampled_from(["2.0", "2.0", "1.0", 2]),
        "id": st.integers(-5, 10**6) | st.text(max_size=10),
    },
    optional={
        "method": st.sampled_from(METHODS) | st.text(max_size=12),
        "params": params | json_value,
    },
)
frame = st.one_of(
    st.text(max_size=200),
    st.binary(max_size=100),
    json_value.map(json.dumps),
    request.map(json.dumps),
    request.map(lambda r: json.dumps(r)[: max(1, len(json.dumps(r)) // 2)]),
    st.just('{"a":' * 3000 + "1" + "}" * 3000),
    st.just("[" * 100_000),
)


class Broker:
    def __init__(self, home: Path, root: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.home, self.root = home, root
        self.endpoint: Endpoint = self.run(self._start())

    def run(self, coro: Any, timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _start(self) -> Endpoint:
        # Only a worker the fuzz cannot name: random delegates must not start real work
        # (a random absolute cwd such as "/" would be snapshotted).
        fake = default_profiles()["fake"]
        fake.name = WORKER
        self.sup = Supervisor(
            self.home, profiles={WORKER: fake}, default_worker="nobody", adopt=False
        )
        await self.sup.start()
        limits = EndpointLimits(rate=1e6, burst=10**6, max_message=256 * 1024)
        return await start_endpoint(self.sup, [str(self.root)], limits=limits)

    async def _stop(self) -> None:
        await self.endpoint.close()
        await self.sup.close()

    def close(self) -> None:
        self.run(self._stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@pytest.fixture
def broker(baton_home: Path, repo: Path) -> Iterator[Broker]:
    b = Broker(baton_home, repo)
    try:
        yield b
    finally:
        b.close()


class Conn:
    def __init__(self, b: Broker) -> None:
        self.b = b
        self.ws: ClientConnection | None = None
        self.n = 10**7
        self.answered = self.closed = 0

    def open(self) -> ClientConnection:
        if self.ws is None:
            ep = self.b.endpoint
            self.ws = connect(
                ep.url,
                additional_headers={"Authorization": f"Bearer {ep.token}"},
                max_size=None,
                legacy=True,
            )
        return self.ws

    def batch(self, frames: list[str | bytes]) -> None:
        """Send the frames and a known request; wait for one answer per frame and for it."""
        ws = self.open()
        self.n += 1
        expected = sum(1 for f in frames if not _is_notification(f))
        try:
            for f in frames:
                ws.send(f)
            ws.send(json.dumps({"jsonrpc": "2.0", "id": self.n, "method": "health"}))
            answers, probed = 0, False
            while not probed or answers < expected:
                msg = json.loads(ws.recv(timeout=10))
                if msg.get("id") == self.n and "result" in msg:
                    assert msg["result"]["ok"] is True
                    probed = True
                elif "error" in msg:
                    assert isinstance(msg["error"]["code"], int) and msg["error"]["message"]
                    answers += 1
                elif "result" in msg:
                    answers += 1
            assert answers == expected
        except ConnectionClosed:
            # Allowed: e.g. a frame over the size limit or invalid UTF-8 closes the connection.
            self.closed += 1
            self.ws = None
            return
        self.answered += answers


def _is_notification(data: str | bytes) -> bool:
    try:
        msg = json.loads(data)
    except (ValueError, RecursionError, TypeError):
        return False
    return (
        isinstance(msg, dict)
        and "id" not in msg
        and msg.get("jsonrpc") == "2.0"
        and isinstance(msg.get("method"), str)
        and msg.get("method") != ""
    )


def test_thousands_of_malformed_frames_leave_the_broker_healthy(broker: Broker) -> None:
    conn = Conn(broker)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
        ],
    )
    @given(st.lists(frame, min_size=FRAMES_PER_EXAMPLE, max_size=FRAMES_PER_EXAMPLE))
    def fuzz(frames: list[str | bytes]) -> None:
        conn.batch(frames)

    fuzz()
    assert conn.answered > 2500
    assert broker.run(broker.sup.list_tasks()) == []  # nothing random got delegated
    if conn.ws is not None:
        conn.ws.close()
    # Healthy after: a fresh client gets answers, and real work still runs to the end.
    auth = {"Authorization": f"Bearer {broker.endpoint.token}"}
    with connect(broker.endpoint.url, additional_headers=auth) as ws:
        ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "watch", "params": {}}))
        assert "subscription" in json.loads(ws.recv(timeout=10))["result"]
        req = {
            "instruction": fake_script(summary="still fine"),
            "cwd": str(broker.root),
            "worker": WORKER,
        }
        ws.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "delegate", "params": req}))
        tid = None
        while True:
            msg = json.loads(ws.recv(timeout=20))
            if msg.get("id") == 2:
                tid = msg["result"]["task"]["id"]
            elif tid is not None and any(
                e["taskId"] == tid and e["data"].get("to") == "answered" for e in pushed(msg)
            ):
                break
    deadline = time.monotonic() + 5
    while broker.endpoint.connections and time.monotonic() < deadline:
        time.sleep(0.02)
    assert broker.endpoint.connections == 0


# ------------------------------------------------------------------------ the upgrade request

OK, BAD, FORBIDDEN, UNKNOWN = "ok", "bad", "forbidden", "unknown"
HOSTS = [
    ("127.0.0.1:{port}", OK),
    ("localhost", OK),
    ("[::1]:{port}", OK),
    ("127.9.9.9", OK),
    ("evil.example:{port}", FORBIDDEN),
    ("10.0.0.1:{port}", FORBIDDEN),
    ("localhost.evil.example", FORBIDDEN),
    ("[::1", BAD),
    ("127.0.0.1:port", BAD),
    (":{port}", BAD),
]
TOKENS = [
    ("Authorization", "Bearer {token}", OK),
    ("Authorization", "{token}", OK),
    ("X-Baton-Token", "{token}", OK),
    ("Authorization", "Bearer nope", FORBIDDEN),
    ("authorization", "Basic {token}x", FORBIDDEN),
]
header_text = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=0, max_size=40
)
host = st.sampled_from(HOSTS) | header_text.map(lambda t: (t, UNKNOWN))
token = st.sampled_from(TOKENS) | header_text.map(lambda t: ("Authorization", t, UNKNOWN))
upgrade = st.tuples(
    st.lists(host, min_size=1, max_size=1) | st.lists(host, max_size=2),
    st.lists(token, max_size=3),
    st.booleans(),  # an Origin header
)


def expected_status(
    hosts: list[tuple[str, str]], tokens: list[tuple[str, str, str]], origin: bool
) -> int | None:
    """The status the broker must answer, or None when a random value leaves it open."""
    if origin:
        return 403
    if len(hosts) != 1:
        return 400
    kind = hosts[0][1]
    if kind != OK:
        return {BAD: 400, FORBIDDEN: 403}.get(kind)
    if len(tokens) > 1:
        return 400
    if tokens:
        return {OK: 101, FORBIDDEN: 401}.get(tokens[0][2])
    return 101


def send_upgrade(port: int, lines: list[str]) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        head = ["GET / HTTP/1.1", *lines, "Upgrade: websocket", "Connection: Upgrade"]
        head += ["Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"]
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        status = sock.makefile("rb").readline()
    return int(status.split()[1])


def test_odd_upgrade_requests_get_a_plain_http_answer_never_a_traceback(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    ep = broker.endpoint
    seen: set[int] = set()

    @settings(
        max_examples=300,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(upgrade)
    @example(([HOSTS[0]], [TOKENS[0]], False))  # 101
    @example(([HOSTS[0]], [TOKENS[3]], False))  # 401
    @example(([HOSTS[0]], [TOKENS[0], TOKENS[0]], False))  # 400
    @example(([HOSTS[4]], [TOKENS[0]], False))  # 403
    def fuzz(case: tuple[list[tuple[str, str]], list[tuple[str, str, str]], bool]) -> None:
        hosts, tokens, origin = case
        fill = {"port": ep.port, "token": ep.token}
        lines = [f"Host: {h.format(**fill) if k != UNKNOWN else h}" for h, k in hosts]
        lines += [f"{n}: {v.format(**fill) if k != UNKNOWN else v}" for n, v, k in tokens]
        lines += ["Origin: http://evil.example"] if origin else []
        status = send_upgrade(ep.port, lines)
        seen.add(status)
        assert status in (101, 400, 401, 403), (lines, status)
        want = expected_status(hosts, tokens, origin)
        assert want is None or status == want, (lines, status, want)

    fuzz()
    assert seen == {101, 400, 401, 403}
    loud = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not loud, [r.getMessage() for r in loud]
