"""Budgets over the websocket (issue 19): a subscriber to every task gets the ``budget``
event of kind ``alert`` when a daily budget passes 80 % (the shape docs/reference/websocket.md
documents), and ``delegate``'s ``maxSteps`` caps a task whose ``retry`` with a raised
``maxSteps`` continues it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from websockets.asyncio.client import connect

from baton.surfaces.ws import protocol as p
from baton.surfaces.ws.endpoint import Endpoint
from tests.conftest import fake_script
from tests.e2e.test_ws_endpoint import Rpc, broker, headers

__all__ = ["broker"]  # the fixture, shared with test_ws_endpoint


async def test_a_subscriber_gets_the_alert_and_delegate_takes_caps(
    broker: Endpoint, repo: Path
) -> None:
    (repo / ".baton.toml").write_text("[budget]\nday_tokens = 1000\n")
    async with connect(broker.url, additional_headers=headers(broker)) as ws:
        rpc = Rpc(ws)
        assert "result" in await rpc.call("watch")  # every task
        brief = fake_script(
            {"usage": {"input": 800, "output": 20}},
            {"write": "a.txt", "content": "a\n"},
            {"write": "b.txt", "content": "b\n"},  # past maxSteps 1
            {"sleep": 3},
            {"write": "c.txt", "content": "c\n"},
        )
        made = await rpc.call("delegate", instruction=brief, cwd=str(repo), maxSteps=1)
        tid = made["result"]["task"]["id"]
        events = await asyncio.wait_for(rpc.events_until_state(tid, {"review", "failed"}), 60)
        budget = [e["data"] for e in events if e["type"] == "budget"]
        alert = next(d for d in budget if d["kind"] == "alert")
        assert {k: alert[k] for k in ("scope", "measure", "used", "limit", "percent")} == {
            "scope": "project",
            "measure": "tokens",
            "used": 820,
            "limit": 1000,
            "percent": 80,
        }
        assert alert["name"] == str(repo.resolve()) and alert["day"] and alert["message"]
        stop = next(d for d in budget if d["kind"] == "stop")
        assert (stop["scope"], stop["measure"], stop["limit"]) == ("task", "steps", 1)
        review = [e for e in events if e["type"] == "state"][-1]["data"]
        assert (review["to"], review["completion"]) == ("review", "budget")

        bad = (await rpc.call("retry", id=tid, maxSteps=0))["error"]
        assert bad["code"] == p.INVALID_PARAMS and "maxSteps" in bad["message"]
        refused = (await rpc.call("retry", id=tid))["error"]
        assert refused["code"] == p.WRONG_STATE and "--max-steps" in refused["message"]
        resumed = (await rpc.call("retry", id=tid, maxSteps=10))["result"]["task"]
        assert resumed["state"] == "running"
        rpc.notes.clear()
        events = await asyncio.wait_for(rpc.events_until_state(tid, {"review", "failed"}), 60)
        done = [e for e in events if e["type"] == "state"][-1]["data"]
        assert done["to"] == "review" and done.get("completion") == "completed", json.dumps(done)
