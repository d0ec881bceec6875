"""The websocket's ``revise``, ``checkpoints`` and ``stepBack``: a comment on a hunk from a
websocket client is a revision turn, each turn's result a checkpoint."""

from __future__ import annotations

import asyncio
from pathlib import Path

from websockets.asyncio.client import connect

from baton.surfaces.ws import protocol as p
from baton.surfaces.ws.endpoint import Endpoint
from tests.conftest import fake_script
from tests.e2e.test_ws_endpoint import Rpc, broker, headers

__all__ = ["broker"]

TWO_TURNS = fake_script(
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    {"end_turn": "first"},
    {"edit": "app.py", "old": "    return 10\n", "new": "    return 5 + 5\n"},
)


async def in_review(rpc: Rpc, tid: str) -> None:
    woke = await asyncio.wait_for(rpc.call("wait", ids=[tid], timeout=60), 90)
    assert woke["result"]["task"]["state"] == "review", woke


async def test_revise_from_a_websocket_client_then_step_back(broker: Endpoint, repo: Path) -> None:
    async with connect(broker.url, additional_headers=headers(broker)) as ws:
        rpc = Rpc(ws)
        tid = (await rpc.call("delegate", instruction=TWO_TURNS, cwd=str(repo)))["result"]
        tid = tid["task"]["id"]
        await in_review(rpc, tid)
        bad = await rpc.call("revise", id=tid, comments=[{"path": "app.py", "text": ""}])
        assert bad["error"]["code"] == p.INVALID_PARAMS and "text" in bad["error"]["message"]
        refused = (await rpc.call("revise", id=tid))["error"]
        assert "needs a comment" in refused["message"]

        comment = {"path": "app.py", "start": 2, "end": 2, "text": "as a sum, please"}
        sent = (await rpc.call("revise", id=tid, comments=[comment]))["result"]
        assert sent["task"]["state"] == "running"
        await in_review(rpc, tid)
        text = (await rpc.call("diff", id=tid, format="text"))["result"]["text"]
        assert "+    return 5 + 5" in text

        turns = (await rpc.call("checkpoints", id=tid))["result"]["turns"]
        assert [(t["turn"], t["shown"]) for t in turns] == [(1, False), (2, True)]
        back = (await rpc.call("stepBack", id=tid, turn=1))["result"]
        assert back["task"]["state"] == "review"
        text = (await rpc.call("diff", id=tid, format="text"))["result"]["text"]
        assert "+    return 10" in text and "5 + 5" not in text
        missing = (await rpc.call("stepBack", id=tid))["error"]
        assert missing["code"] == p.INVALID_PARAMS
