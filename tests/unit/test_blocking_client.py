"""The blocking websocket client (the one-request CLI commands) against a real websockets
server: the handshake, frames of every length, fragments, pings, errors, refusals, closes."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from baton.surfaces.ws.blocking import BlockingClient, accept_key
from baton.surfaces.ws.discovery import Discovery
from baton.surfaces.ws.errors import BrokerError, BrokerUnavailable
from baton.surfaces.ws.frames import frame

TOKEN = "s3cret-token"
Handler = Callable[[ServerConnection], Awaitable[None]]


@contextmanager
def server(handler: Handler, check_token: bool = True) -> Iterator[Discovery]:
    """A websockets server on a thread of its own; yields a discovery record for it."""
    ready = threading.Event()
    port: list[int] = []
    loop = asyncio.new_event_loop()
    stop = loop.create_future()

    def refuse(conn: ServerConnection, request: Request) -> Response | None:
        if check_token and request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return conn.respond(401, "no token\n")
        return None

    async def main() -> None:
        async with serve(handler, "127.0.0.1", 0, process_request=refuse) as srv:
            port.append(srv.sockets[0].getsockname()[1])
            ready.set()
            await stop

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    assert ready.wait(20)
    try:
        yield Discovery(pid=0, port=port[0], token=TOKEN)
    finally:
        loop.call_soon_threadsafe(stop.set_result, None)
        thread.join(20)
        loop.close()


async def answer_all(ws: ServerConnection) -> None:
    """Answer each request with its own params; ``echo`` names what to do first."""
    async for raw in ws:
        msg = json.loads(raw)
        params: dict[str, Any] = msg["params"]
        if params.get("notify"):  # a notification before the answer: the client skips it
            await ws.send(json.dumps({"jsonrpc": "2.0", "method": "event", "params": {}}))
        if params.get("ping"):
            await ws.ping(b"are you there")
        if params.get("fail"):
            error = {"code": -32004, "message": "no such task", "data": {"brokerPid": 7}}
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": error}))
            continue
        reply = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": params})
        if params.get("fragments"):
            await ws.send(iter([reply[:10], reply[10:20], reply[20:]]))
        else:
            await ws.send(reply)


def test_the_accept_key_is_the_rfc_s_example() -> None:
    # RFC 6455 §1.3's worked example.
    assert accept_key(b"dGhlIHNhbXBsZSBub25jZQ==") == b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


@pytest.mark.parametrize("size", [0, 5, 125, 126, 65535, 65536, 300_000])
def test_frames_of_every_length_go_and_come_back(size: int) -> None:
    with server(answer_all) as info, BlockingClient.connect(info) as c:
        text = "x" * size
        assert c.call("echo", text=text) == {"text": text}
        assert c.call("echo", n=2) == {"n": 2}  # the next request on the same connection


def test_fragments_pings_and_notifications_are_handled_on_the_way() -> None:
    with server(answer_all) as info, BlockingClient.connect(info) as c:
        got = c.call("echo", fragments=True, ping=True, notify=True, text="é" * 40)
        assert got == {"fragments": True, "ping": True, "notify": True, "text": "é" * 40}


def test_an_error_answer_is_a_broker_error_with_its_code_and_data() -> None:
    with server(answer_all) as info, BlockingClient.connect(info) as c:
        with pytest.raises(BrokerError) as err:
            c.call("get", fail=True)
        assert (err.value.code, err.value.message) == (-32004, "no such task")
        assert err.value.data == {"brokerPid": 7}


def test_a_wrong_token_is_refused_with_the_server_s_status() -> None:
    with server(answer_all) as info:
        bad = Discovery(pid=0, port=info.port, token="wrong")
        with pytest.raises(BrokerUnavailable, match=r"refused the connection: HTTP/1\.1 401"):
            BlockingClient.connect(bad)


def test_a_server_that_closes_instead_of_answering_is_unavailable() -> None:
    async def close_at_once(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.close(1011, "going away")

    with (
        server(close_at_once) as info,
        BlockingClient.connect(info) as c,
        pytest.raises(BrokerUnavailable, match=r"closed the connection \(1011: going away"),
    ):
        c.call("health")


def test_nobody_listening_is_unavailable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(BrokerUnavailable, match="cannot reach the broker"):
        BlockingClient.connect(Discovery(pid=0, port=port, token=TOKEN), timeout=5)


def test_an_upgrade_answered_with_a_wrong_key_is_refused() -> None:
    """Something that is not a websocket server (it answers 101 with a made-up key)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def fake() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(4096)
            conn.sendall(
                b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                b"Connection: Upgrade\r\nSec-WebSocket-Accept: bm9wZQ==\r\n\r\n"
            )
            conn.recv(4096)

    thread = threading.Thread(target=fake, daemon=True)
    thread.start()
    try:
        with pytest.raises(BrokerUnavailable, match="wrong websocket key"):
            BlockingClient.connect(Discovery(pid=0, port=port, token=TOKEN), timeout=5)
    finally:
        thread.join(10)
        listener.close()


def test_the_upgrade_carries_the_token_and_no_origin() -> None:
    seen: list[Headers] = []

    async def record(ws: ServerConnection) -> None:
        assert ws.request is not None
        seen.append(ws.request.headers)
        await answer_all(ws)

    with server(record) as info, BlockingClient.connect(info) as c:
        c.call("health")
    (headers,) = seen
    assert headers["Authorization"] == f"Bearer {TOKEN}"
    assert "Origin" not in headers
    assert "Sec-WebSocket-Extensions" not in headers


def test_a_frame_is_masked_unless_told_not_to() -> None:
    masked = frame(0x1, b"hello", b"\x01\x02\x03\x04")
    assert masked[:2] == bytes([0x81, 0x80 | 5]) and masked[2:6] == b"\x01\x02\x03\x04"
    assert bytes(b ^ m for b, m in zip(masked[6:], b"\x01\x02\x03\x04\x01", strict=True)) == (
        b"hello"
    )
    assert frame(0x1, b"hello", b"") == bytes([0x81, 5]) + b"hello"
