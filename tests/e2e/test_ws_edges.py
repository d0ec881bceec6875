"""The websocket endpoint's edges, against a real broker over real sockets: what the upgrade
request may carry (one token, a loopback Host, no Origin) and messages over the size limit,
which are answered with an error naming the limit — through the raw protocol, the client the
CLI uses, and the `baton` command itself."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from baton.runtime.supervisor import Supervisor
from baton.surfaces.ws import discovery
from baton.surfaces.ws import protocol as p
from baton.surfaces.ws.client import BrokerError, BrokerUnavailable, Client
from baton.surfaces.ws.endpoint import Endpoint, EndpointLimits, start_endpoint
from baton.surfaces.ws.handshake import host_name, is_loopback
from tests.conftest import fake_script
from tests.e2e.test_cli import baton, stop_brokers
from tests.e2e.test_ws_endpoint import Rpc, headers

MIB = 1 << 20


@pytest.fixture
async def broker(baton_home: Path, repo: Path) -> AsyncIterator[Endpoint]:
    sup = Supervisor(baton_home)
    await sup.start()
    # A small read limit, so that "too large to read at all" is cheap to show.
    endpoint = await start_endpoint(
        sup, [str(repo)], headless=True, limits=EndpointLimits(read_limit=8 * MIB)
    )
    try:
        yield endpoint
    finally:
        await endpoint.close()
        await sup.close()


@pytest.fixture
def quiet_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Every log record of the test; none may be an error or carry a traceback."""
    caplog.set_level(logging.DEBUG)
    yield caplog
    loud = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not loud, [f"{r.name}: {r.getMessage()}" for r in loud]


async def upgrade(port: int, lines: list[str]) -> tuple[int, str]:
    """Send a websocket upgrade with these header lines; the HTTP status and body."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = [
        "GET / HTTP/1.1",
        *lines,
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
    ]
    try:
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), 10)
        code = int(status.split()[1])
        rest = b"" if code == 101 else await asyncio.wait_for(reader.read(4096), 10)
    finally:
        writer.close()
    return code, rest.decode(errors="replace").split("\r\n\r\n", 1)[-1].strip()


def upgrade_cases(port: int, token: str) -> list[tuple[list[str], int, str]]:
    """(header lines, expected status, words of the answer) — loopback Host unless said."""
    host = f"Host: 127.0.0.1:{port}"
    auth = f"Authorization: Bearer {token}"
    return [
        ([host, auth], 101, ""),
        ([host], 101, ""),  # no token yet: `auth` must come first
        ([f"Host: localhost:{port}", auth], 101, ""),
        (["Host: LOCALHOST", auth], 101, ""),
        (["Host: localhost.", auth], 101, ""),
        ([f"Host: [::1]:{port}", auth], 101, ""),
        (["Host: 127.0.0.2", auth], 101, ""),
        ([host, f"X-Baton-Token: {token}"], 101, ""),
        ([host, auth, auth], 400, "more than one token"),
        ([host, "Authorization: Bearer nope", auth], 400, "more than one token"),
        ([host, auth, f"X-Baton-Token: {token}"], 400, "more than one token"),
        ([host, "Authorization: Bearer nope"], 401, "wrong token"),
        ([f"Host: evil.example:{port}", auth], 403, "Host"),
        ([f"Host: localhost.evil.example:{port}", auth], 403, "Host"),
        ([f"Host: 127.0.0.1.nip.io:{port}", auth], 403, "Host"),
        ([f"Host: 10.1.2.3:{port}", auth], 403, "Host"),
        ([f"Host: [::ffff:8.8.8.8]:{port}", auth], 403, "Host"),
        ([auth], 400, "no Host"),
        ([host, f"Host: evil.example:{port}", auth], 400, "more than one Host"),
        (["Host: [::1", auth], 400, "not a host"),
        (["Host: 127.0.0.1:http", auth], 400, "not a host"),
        (["Host: 127.0.0.1:99999", auth], 400, "not a host"),
        (["Host: [localhost]:80", auth], 400, "not a host"),
        ([host, auth, "Origin: http://evil.example"], 403, "Origin"),
        ([host, "Origin: null"], 403, "Origin"),
    ]


async def test_the_upgrade_takes_one_token_and_a_loopback_host(
    broker: Endpoint, quiet_log: pytest.LogCaptureFixture
) -> None:
    for lines, status, words in upgrade_cases(broker.port, broker.token):
        got, body = await upgrade(broker.port, lines)
        assert (got, words in body) == (status, True), (lines, got, body)
    # The real client, sending the same token twice: 400, and the broker carries on.
    twice = [("Authorization", f"Bearer {broker.token}")] * 2
    with pytest.raises(InvalidStatus) as refused:
        async with connect(broker.url, additional_headers=twice):
            pass
    assert refused.value.response.status_code == 400
    async with connect(broker.url, additional_headers=headers(broker)) as ws:
        assert (await Rpc(ws).call("health"))["result"]["ok"] is True
    assert not any("Traceback" in r.getMessage() for r in quiet_log.records)


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("127.0.0.1:8080", "127.0.0.1"),
        ("localhost", "localhost"),
        ("[::1]:9", "::1"),
        ("[::1]", "::1"),
        ("", None),
        (":80", None),
        ("a:b:c", None),
        ("[::1]x", None),
    ],
)
def test_host_names_are_read_strictly(value: str, name: str | None) -> None:
    assert host_name(value) == name


def test_only_loopback_names_count() -> None:
    assert all(map(is_loopback, ["localhost", "127.0.0.1", "127.255.0.9", "::1", "LocalHost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "192.168.1.2", "example.com", "localhost.com"]))


async def test_an_oversized_request_gets_an_error_naming_the_limit(
    broker: Endpoint, repo: Path, quiet_log: pytest.LogCaptureFixture
) -> None:
    brief = "x" * (5 * MIB)
    async with connect(broker.url, additional_headers=headers(broker), max_size=None) as ws:
        rpc = Rpc(ws)
        err = (await rpc.call("delegate", instruction=brief, cwd=str(repo)))["error"]
        assert err["code"] == p.TOO_LARGE
        assert "the broker takes at most 1 MiB per message" in err["message"]
        assert "5.0 MiB" in err["message"]
        assert err["data"]["limit"] == MIB and err["data"]["size"] > 5 * MIB
        # Counted in bytes: 400 Ki three-byte characters are 1.2 MiB (300 Ki of them fit).
        for n, fits in ((300 << 10, True), (400 << 10, False)):
            req = {"jsonrpc": "2.0", "id": n, "method": "health", "params": {"x": "€" * n}}
            await ws.send(json.dumps(req, ensure_ascii=False))
            answer = json.loads(await asyncio.wait_for(ws.recv(), 10))
            too_large = answer.get("error", {}).get("code") == p.TOO_LARGE
            assert answer["id"] == n and too_large is not fits, answer
        assert answer["error"]["code"] == p.TOO_LARGE and "1.2 MiB" in answer["error"]["message"]
        # Not JSON, or a notification: the first is answered (id null), the second is not.
        await ws.send("{" * (2 * MIB))
        junk = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert junk["id"] is None and junk["error"]["code"] == p.TOO_LARGE
        note = {"jsonrpc": "2.0", "method": "delegate", "params": {"instruction": brief}}
        await ws.send(json.dumps(note))
        # The connection stays open and useful; nothing was delegated.
        # Just over: said in bytes, not as "1.0 MiB, at most 1 MiB".
        just = (await rpc.call("health", x="x" * MIB))["error"]
        size = just["data"]["size"]
        assert MIB < size < MIB + 100 and just["message"] == (
            f"the request is {size} bytes; the broker takes at most {MIB} bytes per message"
        )
        assert (await rpc.call("health"))["result"]["ok"] is True
        assert (await rpc.call("tasks"))["result"]["tasks"] == []
        assert not rpc.notes
    # Through the client the CLI and the MCP bridge use.
    info = discovery.read(broker.discovery_path) if broker.discovery_path else None
    assert info is not None
    async with await Client.connect(info) as client:
        with pytest.raises(BrokerError) as too_large:
            await client.call("delegate", instruction=brief, cwd=str(repo))
        assert too_large.value.code == p.TOO_LARGE and "1 MiB" in too_large.value.message
        assert (await client.call("health"))["ok"] is True
        # Past what the broker reads at all (8 MiB here): closed with 1009, said plainly.
        with pytest.raises(BrokerUnavailable) as closed:
            await client.call("delegate", instruction="x" * (9 * MIB), cwd=str(repo))
        assert "the request is too large" in str(closed.value)


async def test_before_authentication_an_oversized_message_is_not_read(broker: Endpoint) -> None:
    async with connect(broker.url, max_size=None) as ws:
        await ws.send("x" * (2 * MIB))
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    # Authenticated by the first message, a connection is told instead.
    async with connect(broker.url, max_size=None) as ws:
        rpc = Rpc(ws)
        assert (await rpc.call("auth", token=broker.token))["result"]["ok"] is True
        err = (await rpc.call("health", pad="x" * (2 * MIB)))["error"]
        assert err["code"] == p.TOO_LARGE and "1 MiB" in err["message"]


def test_the_cli_says_a_brief_is_over_the_limit(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run" / "baton"
    try:
        big = baton("delegate", "-", "--cwd", str(repo), stdin="x" * 5_000_000, timeout=120)
        assert big.returncode == 2, big.stderr
        said = " ".join(big.stderr.split())
        assert "the request is 4.8 MiB; the broker takes at most 1 MiB per message" in said
        assert "save the material in a file" in said
        assert "closed the connection" not in said
        # The broker is fine: the next delegate goes through.
        small = baton("delegate", fake_script(), "--cwd", str(repo))
        assert small.returncode == 0 and small.stdout.strip(), small.stderr
        log = (run_dir / "serve.log").read_text(errors="replace")
        assert "Traceback" not in log and "ERROR" not in log, log
    finally:
        stop_brokers(run_dir)
