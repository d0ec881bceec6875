"""The broker's websocket endpoint through real websocket clients: a real Supervisor, real git,
the real fake agent, real sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import stat
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from baton.runtime.supervisor import Supervisor
from baton.store.paths import runtime_dir
from baton.surfaces.ws import discovery
from baton.surfaces.ws import protocol as p
from baton.surfaces.ws.endpoint import Endpoint, EndpointLimits, start_endpoint
from baton.surfaces.ws.serve import broker_supervisor
from tests.conftest import fake_script

STREAM = (
    {"say": "looking at app.py ", "chunks": 5, "delay": 0.01},
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    {"stream": 40, "rate": 2000, "size": 32},
    {"say": "done", "chunks": 2},
)


@pytest.fixture
async def broker(baton_home: Path, repo: Path) -> AsyncIterator[Endpoint]:
    sup = Supervisor(baton_home)
    await sup.start()
    endpoint = await start_endpoint(sup, [str(repo)], headless=True)
    try:
        yield endpoint
    finally:
        await endpoint.close()
        await sup.close()


def headers(ep: Endpoint) -> dict[str, str]:
    return {"Authorization": f"Bearer {ep.token}"}


def pushed(msg: dict[str, Any]) -> list[dict[str, Any]]:
    """The events in an `event` or `events` (a burst) notification."""
    if msg.get("method") == "event":
        return [msg["params"]["event"]]
    if msg.get("method") == "events":
        return list(msg["params"]["events"])
    return []


class Rpc:
    """A minimal raw JSON-RPC client over one websocket (keeps notifications aside)."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.n = 0
        self.notes: list[dict[str, Any]] = []

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.n += 1
        await self.ws.send(
            json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        )
        while True:
            msg = json.loads(await asyncio.wait_for(self.ws.recv(), 10))
            if msg.get("id") == self.n:
                return dict(msg)
            self.notes.append(msg)

    async def events_until_state(self, task_id: str, states: set[str]) -> list[dict[str, Any]]:
        events = [e for n in self.notes for e in pushed(n)]
        while not any(
            e["taskId"] == task_id and e["type"] == "state" and e["data"]["to"] in states
            for e in events
        ):
            msg = json.loads(await asyncio.wait_for(self.ws.recv(), 20))
            events += pushed(msg)
        return [e for e in events if e["taskId"] == task_id]


async def test_two_subscribers_receive_every_event_in_order(broker: Endpoint, repo: Path) -> None:
    async with (
        connect(broker.url, additional_headers=headers(broker)) as a,
        connect(broker.url, additional_headers=headers(broker)) as b,
    ):
        ra, rb = Rpc(a), Rpc(b)
        assert "subscription" in (await ra.call("watch"))["result"]
        assert "subscription" in (await rb.call("subscribe"))["result"]
        res = await ra.call("delegate", instruction=fake_script(*STREAM), cwd=str(repo))
        task = res["result"]["task"]
        assert task["state"] == "queued" and task["next"] == ["watch", "cancel"]
        got_a, got_b = await asyncio.gather(
            ra.events_until_state(task["id"], {"review"}),
            rb.events_until_state(task["id"], {"review"}),
        )
        health = (await ra.call("health"))["result"]
    fanout, delegated = health["fanout"], health["delegate"]
    assert fanout["batches"] > 0 and 0 <= fanout["median"] <= fanout["p99"] <= fanout["max"]
    assert delegated["answers"] == 1 and 0 < delegated["median"] == delegated["max"]
    stored = await broker.sup.events(task["id"])
    assert [e["seq"] for e in got_a] == [e.seq for e in stored] == list(range(1, len(stored) + 1))
    assert got_a == got_b == [e.to_json() for e in stored]
    assert len(stored) > 40


async def test_watch_replays_history_then_live_without_gaps(broker: Endpoint, repo: Path) -> None:
    async with connect(broker.url, additional_headers=headers(broker)) as ws:
        rpc = Rpc(ws)
        task = (await rpc.call("delegate", instruction=fake_script(*STREAM), cwd=str(repo)))[
            "result"
        ]["task"]
        await asyncio.sleep(0.15)  # some events are history by now
        res = (await rpc.call("watch", ids=[task["id"][:6]]))["result"]
        assert res["tasks"][0]["id"] == task["id"]
        got = await rpc.events_until_state(task["id"], {"review"})
    stored = await broker.sup.events(task["id"])
    assert [e["seq"] for e in got] == [e.seq for e in stored]


async def test_a_subscriber_that_stops_reading_is_cut_off_not_waited_for(
    baton_home: Path, repo: Path
) -> None:
    """A stalled subscriber's unsent data is bounded: past the bound it gets `overflow` and no
    more events, while a reading subscriber gets every event, in order, meanwhile."""
    sup = Supervisor(baton_home)
    await sup.start()
    limits = EndpointLimits(send_buffer=1 << 20, stalled=1.0)
    ep = await start_endpoint(sup, [str(repo)], limits=limits)
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: small window
    stalled.connect(("127.0.0.1", ep.port))
    try:
        async with (
            connect(ep.url, additional_headers=headers(ep), sock=stalled, max_queue=1) as slow,
            connect(ep.url, additional_headers=headers(ep)) as fast,
        ):
            rs, rf = Rpc(slow), Rpc(fast)
            await rs.call("watch")
            await rf.call("watch")
            big = fake_script({"stream": 4000, "rate": 1000, "size": 4000})  # 16 MB in 4 s
            task = (await rf.call("delegate", instruction=big, cwd=str(repo)))["result"]["task"]
            got = await rf.events_until_state(task["id"], {"answered"})
            stored = await sup.events(task["id"])
            assert [e["seq"] for e in got] == [e.seq for e in stored]
            assert len(stored) > 4000
            # The slow one resumes reading: some events, then the overflow notice, then
            # nothing more for that subscription.
            seen, notes = [], []
            with contextlib.suppress(TimeoutError):
                while True:
                    msg = json.loads(await asyncio.wait_for(slow.recv(), 2))
                    notes.append(msg.get("method"))
                    seen += pushed(msg)
            assert "overflow" in notes
            assert notes.index("overflow") == len(notes) - 1
            assert 0 < len(seen) < len(stored)
            assert [e["seq"] for e in seen] == list(range(1, len(seen) + 1))
            # The connection still serves requests, and catches up from the store in pages.
            pages, more = 0, True
            while more:
                page = (await rs.call("events", id=task["id"], after=seen[-1]["seq"]))["result"]
                seen += page["events"]
                more, pages = page["more"], pages + 1
            assert [e["seq"] for e in seen] == [e.seq for e in stored]
            assert pages > 1  # about 16 MB of events do not come back in one answer
    finally:
        await ep.close()
        await sup.close()


async def test_token_is_required_and_origin_refused(broker: Endpoint) -> None:
    # No token: the connection opens, but anything but `auth` is refused and it is closed.
    async with connect(broker.url) as ws:
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "health"}))
        msg = json.loads(await ws.recv())
        assert msg["error"]["code"] == p.UNAUTHORIZED
        with pytest.raises(ConnectionClosed):
            await ws.recv()
    # A wrong token in the header: the upgrade is refused.
    with pytest.raises(InvalidStatus) as wrong:
        async with connect(broker.url, additional_headers={"Authorization": "Bearer nope"}):
            pass
    assert wrong.value.response.status_code == 401
    # A wrong token as the first message.
    async with connect(broker.url) as ws:
        await ws.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "auth",
                    "params": {"token": broker.token[:-1] + "x"},
                }
            )
        )
        assert json.loads(await ws.recv())["error"]["code"] == p.UNAUTHORIZED
        with pytest.raises(ConnectionClosed):
            await ws.recv()
    # An Origin header, even with the right token: refused (browsers always send one).
    with pytest.raises(InvalidStatus) as origin:
        async with connect(
            broker.url,
            origin="http://evil.example",
            additional_headers=headers(broker),  # type: ignore[arg-type]
        ):
            pass
    assert origin.value.response.status_code == 403
    # The right token as the first message works.
    async with connect(broker.url) as ws:
        rpc = Rpc(ws)
        assert (await rpc.call("auth", token=broker.token))["result"]["ok"] is True
        assert (await rpc.call("health"))["result"]["ok"] is True


async def test_errors_name_the_right_move(broker: Endpoint, repo: Path) -> None:
    async with connect(broker.url, additional_headers=headers(broker)) as ws:
        rpc = Rpc(ws)
        assert (await rpc.call("nope"))["error"]["code"] == p.METHOD_NOT_FOUND
        assert (await rpc.call("inspect", id="zzzzzz"))["error"]["code"] == p.UNKNOWN_TASK
        bad = await rpc.call("delegate", instruction="x", cwd=str(repo), worker="nobody")
        assert (
            bad["error"]["code"] == p.INVALID_PARAMS and "unknown worker" in bad["error"]["message"]
        )
        typo = await rpc.call("tasks", stat="review")
        assert typo["error"]["code"] == p.INVALID_PARAMS and "stat" in typo["error"]["message"]
        script = fake_script({"ask": "Which number?"})
        tid = (await rpc.call("delegate", instruction=script, cwd=str(repo)))["result"]["task"][
            "id"
        ]
        await rpc.call("watch", ids=[tid])
        await rpc.events_until_state(tid, {"needs_input"})
        steer = await rpc.call("steer", id=tid, text="go")
        err = steer["error"]
        assert err["code"] == p.WRONG_STATE and "use reply" in err["message"]
        assert err["data"]["state"] == "needs_input" and err["data"]["next"] == ["reply", "cancel"]
        got = (await rpc.call("get", id=tid))["result"]["task"]
        assert got["next"] == ["reply", "cancel"]
        listed = (await rpc.call("tasks", state=["needs_input"]))["result"]["tasks"]
        assert [t["id"] for t in listed] == [tid] and listed[0]["next"] == ["reply", "cancel"]
        cancelled = (await rpc.call("cancel", id=tid))["result"]["task"]
        assert cancelled["state"] == "cancelled" and cancelled["next"] == ["inspect", "retry"]


async def test_memory_goes_into_the_next_brief(broker: Endpoint, repo: Path) -> None:
    async with connect(broker.url, additional_headers=headers(broker)) as ws:
        rpc = Rpc(ws)
        added = (await rpc.call("memory", op="add", text="Use tabs in Makefiles."))["result"]
        assert [m["text"] for m in added["memory"]] == ["Use tabs in Makefiles."]
        tid = (await rpc.call("delegate", instruction=fake_script(), cwd=str(repo)))["result"][
            "task"
        ]["id"]
        await rpc.call("watch", ids=[tid])
        await rpc.events_until_state(tid, {"answered", "review"})
        assert "Use tabs in Makefiles." in (await broker.sup.get(tid)).brief
        mid = added["memory"][0]["id"]
        assert (await rpc.call("memory", op="remove", id=mid))["result"]["memory"] == []
        assert (await rpc.call("memory", op="remove", id=mid))["error"]["code"] == p.INVALID_PARAMS
        workers = (await rpc.call("workers"))["result"]["workers"]
        assert "fake" in [w["name"] for w in workers]


async def test_discovery_file_is_private_atomic_and_removed(baton_home: Path, repo: Path) -> None:
    sup = Supervisor(baton_home)
    await sup.start()
    run = runtime_dir(baton_home)
    stale = discovery.Discovery(pid=2**22 + 17, port=1, token="t", roots=[str(repo)])
    stale_path = discovery.write(stale, run)
    endpoint = await start_endpoint(sup, [str(repo)], headless=True)
    try:
        path = endpoint.discovery_path
        assert path is not None and path.parent == run
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(run.stat().st_mode) == 0o700
        rec = json.loads(path.read_text())
        assert rec["pid"] == os.getpid() and rec["port"] == endpoint.port
        assert rec["token"] == endpoint.token and len(rec["token"]) >= 32
        assert rec["roots"] == [str(repo.resolve())] and rec["version"]
        assert not list(run.glob(".tmp-*"))
        found = discovery.broker_for(repo / "sub", run, home=baton_home.resolve())
        assert found is not None and found.pid == os.getpid()
        assert not stale_path.exists()  # the dead broker's file was dropped, not used
        assert discovery.broker_for(repo.parent, run) is None
    finally:
        await endpoint.close()
        await sup.close()
    assert not path.exists()


async def test_limits_size_and_rate(baton_home: Path, repo: Path) -> None:
    sup = Supervisor(baton_home)
    await sup.start()
    limits = EndpointLimits(max_message=4096, read_limit=65536, rate=5, burst=10)
    ep = await start_endpoint(sup, [str(repo)], limits=limits)
    try:
        async with connect(ep.url, additional_headers=headers(ep)) as ws:
            await ws.send("x" * 10_000)  # over the limit: told so, and the connection stays
            err = json.loads(await ws.recv())["error"]
            assert err["code"] == p.TOO_LARGE and "at most 4 KiB per message" in err["message"]
            await ws.send("x" * 100_000)  # over what the broker reads at all: closed
            with pytest.raises(ConnectionClosed) as closed:
                await ws.recv()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
        async with connect(ep.url, additional_headers=headers(ep)) as ws:
            for i in range(30):
                await ws.send(json.dumps({"jsonrpc": "2.0", "id": i, "method": "health"}))
            codes = []
            for _ in range(30):
                msg = json.loads(await asyncio.wait_for(ws.recv(), 5))
                codes.append(msg.get("error", {}).get("code"))
            assert codes.count(p.RATE_LIMITED) >= 15 and codes.count(None) >= 10
            await asyncio.sleep(0.5)
            rpc = Rpc(ws)
            rpc.n = 100
            assert (await rpc.call("health"))["result"]["ok"]  # it recovers
    finally:
        await ep.close()
        await sup.close()


def test_protocol_parse_refuses_what_is_not_a_request() -> None:
    for frame, code in [
        ("{", p.PARSE_ERROR),
        (b"{}", p.PARSE_ERROR),
        ("[]", p.INVALID_REQUEST),
        ("3", p.INVALID_REQUEST),
        ('{"jsonrpc":"2.0","id":true,"method":"x"}', p.INVALID_REQUEST),
        ('{"jsonrpc":"1.0","id":1,"method":"x"}', p.INVALID_REQUEST),
        ('{"jsonrpc":"2.0","id":1,"method":""}', p.INVALID_REQUEST),
        ('{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}', p.INVALID_PARAMS),
    ]:
        with pytest.raises(p.RpcError) as err:
            p.parse(frame)
        assert err.value.code == code, frame
    req = p.parse('{"jsonrpc":"2.0","method":"x"}')
    assert req.id is None and req.method == "x"
    assert time.time() > 0


async def test_workers_answers_from_the_users_and_the_projects_settings(
    baton_home: Path, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 16 case 2: the user's default and own profiles, the project's too, with sources."""
    user = tmp_path / "user.toml"
    user.write_text(
        'default_worker = "claude-work"\n'
        "[profiles.claude-work]\n"
        'provider = "claude"\nmodel = "claude-sonnet-4-5"\nconfig_dir = "~/.claude-work"\n'
    )
    monkeypatch.setenv("BATON_CONFIG", str(user))
    (repo / ".baton.toml").write_text('[profiles.local]\nprovider = "fake"\nlabel = "mine"\n')
    sup = broker_supervisor(baton_home)
    await sup.start()
    endpoint = await start_endpoint(sup, [str(repo)], headless=True)
    try:
        async with connect(endpoint.url, additional_headers=headers(endpoint)) as ws:
            res = (await Rpc(ws).call("workers"))["result"]
        assert res["default"] == "claude-work" and str(user) in res["default_reason"]
        by_name = {w["name"]: w for w in res["workers"]}
        assert by_name["claude-work"]["model"] == "claude-sonnet-4-5"
        assert by_name["claude-work"]["source"] == "user"
        assert by_name["local"]["source"] == "project" and by_name["local"]["label"] == "mine"
    finally:
        await endpoint.close()
        await sup.close()
