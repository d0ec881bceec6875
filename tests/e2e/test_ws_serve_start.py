"""A headless broker listens before its Supervisor has started (``baton serve`` started on
demand): a request that arrives meanwhile waits for the start and then runs, or is told why
the broker could not start; nothing is answered from half a broker. Real sockets, a real
Supervisor held at its start by a gate."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect

import baton.surfaces.ws.serve as serving
from baton.runtime.supervisor import Supervisor
from baton.surfaces.ws.endpoint import Endpoint
from tests.conftest import fake_script


def held_at_start(
    monkeypatch: pytest.MonkeyPatch, gate: asyncio.Event, fails: Exception | None = None
) -> None:
    """The broker's Supervisor starts once ``gate`` is set (then raises ``fails``, if given)."""
    real = serving.broker_supervisor

    def make(home: Path) -> Supervisor:
        sup = real(home)
        start = sup.start

        async def later() -> None:
            await gate.wait()
            if fails is not None:
                raise fails
            await start()

        monkeypatch.setattr(sup, "start", later)
        return sup

    monkeypatch.setattr(serving, "broker_supervisor", make)


async def call(ws: ClientConnection, rid: int, method: str, **params: Any) -> dict[str, Any]:
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
    while True:
        msg = json.loads(await ws.recv())
        if msg.get("id") == rid:
            return dict(msg)


def on_ready() -> tuple[asyncio.Future[Endpoint], Callable[[Endpoint], None]]:
    ready: asyncio.Future[Endpoint] = asyncio.get_running_loop().create_future()
    return ready, ready.set_result


async def test_a_request_sent_before_the_supervisor_started_waits_for_it(
    baton_home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = asyncio.Event()
    held_at_start(monkeypatch, gate)
    ready, said_ready = on_ready()
    broker = asyncio.create_task(
        serving.serve([str(repo)], idle_exit=0.5, home=baton_home, on_ready=said_ready)
    )
    endpoint = await asyncio.wait_for(ready, 30)
    record = json.loads(Path(str(endpoint.discovery_path)).read_text())
    assert record["port"] == endpoint.port and record["broker"] == endpoint.broker
    auth = {"Authorization": f"Bearer {endpoint.token}"}
    async with connect(endpoint.url, additional_headers=auth) as ws:
        assert (await call(ws, 1, "auth", token=endpoint.token))["result"]["ok"]  # at once
        delegated = asyncio.create_task(
            call(ws, 2, "delegate", instruction=fake_script({"say": "hi"}), cwd=str(repo))
        )
        await asyncio.sleep(0.5)
        assert not delegated.done()  # it waits for the Supervisor…
        gate.set()
        task = (await asyncio.wait_for(delegated, 30))["result"]["task"]  # …then runs
        assert endpoint.sup.id == endpoint.broker == record["broker"]
        got = await call(ws, 3, "get", id=task["id"])
        assert got["result"]["task"]["id"] == task["id"]
    assert await asyncio.wait_for(broker, 60) == 0  # idle once the task settled
    assert endpoint.discovery_path is not None and not endpoint.discovery_path.exists()


async def test_a_supervisor_that_cannot_start_is_named_to_the_waiting_request(
    baton_home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = asyncio.Event()
    held_at_start(monkeypatch, gate, fails=RuntimeError("the database is from a newer Baton"))
    ready, said_ready = on_ready()
    broker = asyncio.create_task(serving.serve([str(repo)], home=baton_home, on_ready=said_ready))
    endpoint = await asyncio.wait_for(ready, 30)
    auth = {"Authorization": f"Bearer {endpoint.token}"}
    async with connect(endpoint.url, additional_headers=auth) as ws:
        waiting = asyncio.create_task(call(ws, 1, "tasks"))
        await asyncio.sleep(0.3)
        assert not waiting.done()
        gate.set()
        error = (await asyncio.wait_for(waiting, 30))["error"]
        assert error["message"] == "the broker could not start: the database is from a newer Baton"
        # no client is to find it any more; one that found it before is still answered
        assert endpoint.discovery_path is not None and not endpoint.discovery_path.exists()
        async with connect(endpoint.url, additional_headers=auth) as late:
            assert (await call(late, 1, "health"))["error"] == error
    with pytest.raises(RuntimeError, match="newer Baton"):
        await asyncio.wait_for(broker, 30)  # then the broker exits with it
