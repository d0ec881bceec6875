"""The websocket's ``plan`` (issue 21): the fake agent as the planner proposes a graph, the
broker checks it; a bad one is refused with its reasons, a question is answered with
``reply``, edited nodes are checked again, and a plan is approved once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect

from baton.surfaces.ws import protocol as p
from baton.surfaces.ws.endpoint import Endpoint
from tests.e2e.test_ws_endpoint import Rpc, broker, headers
from tests.integration.test_planning import PLAN, planner

__all__ = ["broker"]  # the fixture

CYCLE = [
    {"key": "a", "instruction": "x", "after": ["b"], "scope": ["a/**"]},
    {"key": "b", "instruction": "y", "after": ["a"], "scope": ["b/**"]},
]


async def call(rpc: Rpc, method: str, **params: Any) -> dict[str, Any]:
    """A call that may wait for a planner (longer than Rpc's 10 s on a loaded machine)."""
    rpc.n += 1
    frame = {"jsonrpc": "2.0", "id": rpc.n, "method": method, "params": params}
    await rpc.ws.send(json.dumps(frame))
    while True:
        msg = json.loads(await asyncio.wait_for(rpc.ws.recv(), 120))
        if msg.get("id") == rpc.n:
            return dict(msg)


async def test_a_plan_is_proposed_checked_and_approved_once(
    broker: Endpoint, repo: Path, tmp_path: Path
) -> None:
    planner(repo, tmp_path, {"steps": [{"say": "reading"}], "summary": json.dumps(PLAN)})
    async with connect(broker.url, additional_headers=headers(broker)) as ws:
        rpc = Rpc(ws)
        started = (await call(rpc, "plan", goal="Split the work", worker="planner"))["result"]
        assert set(started) == {"task"} and started["task"]["worker"] == "planner"
        tid = started["task"]["id"]
        read = (await call(rpc, "plan", id=tid, timeout=90))["result"]
        assert read["task"]["state"] == "answered"
        assert (read["nodes"], read["problems"]) == (PLAN, [])

        ran = (await call(rpc, "plan", id=tid, approve=True))["result"]
        assert sorted(ran["tasks"]) == ["join", "left", "right"]
        assert ran["tasks"]["join"]["state"] == "queued"
        ids = {k: t["id"] for k, t in ran["tasks"].items()}
        join = (await rpc.call("get", id=ids["join"]))["result"]["task"]
        assert join["instruction"] == "Write join.txt" and join["worker"] == "doer"

        again = (await call(rpc, "plan", id=tid, approve=True))["error"]
        assert again["code"] == p.WRONG_STATE and again["data"]["tasks"] == ids
        assert "approved already" in again["message"]
        listed = (await rpc.call("tasks", root=str(repo)))["result"]["tasks"]
        assert len(listed) == 4  # the planner and the three: nothing started twice
        shown = (await call(rpc, "plan", id=tid))["result"]
        assert shown["approved"] == ids and shown["problems"][-1].startswith("the plan was")


async def test_a_bad_plan_is_refused_and_edited_nodes_run(
    broker: Endpoint, repo: Path, tmp_path: Path
) -> None:
    planner(repo, tmp_path, {"steps": [], "summary": json.dumps(CYCLE)})
    async with connect(broker.url, additional_headers=headers(broker)) as ws:
        rpc = Rpc(ws)
        read = (await call(rpc, "plan", goal="Loop", worker="planner", timeout=90))["result"]
        assert read["nodes"] == CYCLE and read["problems"] == ["the plan has a cycle: a → b → a"]
        tid = read["task"]["id"]
        refused = (await call(rpc, "plan", id=tid, approve=True))["error"]
        assert refused["code"] == p.WRONG_STATE
        assert refused["data"] == {"problems": ["the plan has a cycle: a → b → a"]}
        assert "cycle" in refused["message"]
        edited = [CYCLE[0] | {"after": []}, CYCLE[1] | {"worker": "nobody"}]
        bad = (await call(rpc, "plan", id=tid, approve=True, nodes=edited))["error"]
        assert bad["data"]["problems"] == [
            "b: worker 'nobody' is not allowed here (allowed: doer, planner)"
        ]
        assert len((await rpc.call("tasks"))["result"]["tasks"]) == 1  # only the planner

        edited[1] = CYCLE[1] | {"worker": "doer"}
        ran = (await call(rpc, "plan", id=tid, approve=True, nodes=edited))["result"]
        assert sorted(ran["tasks"]) == ["a", "b"]
        a = (await rpc.call("get", id=ran["tasks"]["a"]["id"]))["result"]["task"]
        assert a["instruction"] == "x" and a["scope"] == ["a/**"]

        wrong = (await rpc.call("plan", id=tid, nodes=edited))["error"]
        assert wrong["code"] == p.INVALID_PARAMS and "only with approve" in wrong["message"]
        mixed = (await rpc.call("plan", goal="x", id=tid))["error"]
        assert mixed["code"] == p.INVALID_PARAMS
        other = (await rpc.call("plan", id=ran["tasks"]["a"]["id"]))["error"]
        assert other["code"] == p.WRONG_STATE and "is not a planner" in other["message"]


async def test_a_question_is_answered_with_reply(
    broker: Endpoint, repo: Path, tmp_path: Path
) -> None:
    script = {"steps": [{"ask": "Which database?"}], "summary": json.dumps(PLAN)}
    planner(repo, tmp_path, script)
    async with connect(broker.url, additional_headers=headers(broker)) as ws:
        rpc = Rpc(ws)
        asked = await call(rpc, "plan", goal="Add storage", worker="planner", timeout=90)
        read = asked["result"]
        assert read["question"] == "Which database?" and "nodes" not in read
        tid = read["task"]["id"]
        early = (await call(rpc, "plan", id=tid, approve=True))["error"]
        assert early["code"] == p.WRONG_STATE and "asks a question" in early["message"]

        assert "result" in await rpc.call("reply", id=tid, text="SQLite")
        read = (await call(rpc, "plan", id=tid, timeout=90))["result"]
        assert read["task"]["state"] == "answered" and read["nodes"] == PLAN
        assert read["problems"] == []


async def test_a_planner_still_working_answers_with_its_line(
    broker: Endpoint, repo: Path, tmp_path: Path
) -> None:
    planner(repo, tmp_path, {"steps": [{"sleep": 30}], "summary": json.dumps(PLAN)})
    async with connect(broker.url, additional_headers=headers(broker)) as ws:
        rpc = Rpc(ws)
        read = (await call(rpc, "plan", goal="Slow", worker="planner", timeout=0.5))["result"]
        assert set(read) == {"task"} and read["task"]["state"] in ("queued", "preparing", "running")
        early = (await call(rpc, "plan", id=read["task"]["id"], approve=True))["error"]
        assert early["code"] == p.WRONG_STATE and early["data"]["problems"] == [
            "the planner is still working"
        ]
        assert "result" in await rpc.call("cancel", id=read["task"]["id"])
        ended = (await call(rpc, "plan", id=read["task"]["id"], timeout=60))["result"]
        assert ended["task"]["state"] == "cancelled" and ended["nodes"] is None
        assert ended["problems"][0].startswith("the planner ended cancelled")


async def test_a_rejected_plan_is_refused_approval(
    broker: Endpoint, repo: Path, tmp_path: Path
) -> None:
    planner(repo, tmp_path, {"steps": [], "summary": json.dumps(PLAN)})
    async with connect(broker.url, additional_headers=headers(broker)) as ws:
        rpc = Rpc(ws)
        read = (await call(rpc, "plan", goal="Split", worker="planner", timeout=60))["result"]
        tid = read["task"]["id"]
        said = (await call(rpc, "plan", id=tid, reject=True))["result"]
        assert said["rejected"] is True and said["problems"] == ["the plan was rejected"]
        refused = (await call(rpc, "plan", id=tid, approve=True, nodes=PLAN))["error"]
        assert refused["code"] == p.WRONG_STATE and "was rejected" in refused["message"]
        mixed = (await call(rpc, "plan", id=tid, reject=True, approve=True))["error"]
        assert mixed["code"] == p.INVALID_PARAMS
