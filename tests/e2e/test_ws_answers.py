"""The websocket's answers, sized for a context window: a task once, as a short line, nulls
left out; ``inspect`` short unless asked for ``detail``; ``wait`` blocking until the first of
several tasks settles — also for a task another broker supervises, whose events never reach
the broker asked."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from baton.surfaces.ws import discovery
from baton.surfaces.ws import protocol as p
from baton.surfaces.ws.client import Client
from baton.surfaces.ws.endpoint import Endpoint
from tests.conftest import fake_script, git
from tests.e2e.test_cli import baton, stop_brokers
from tests.e2e.test_ws_endpoint import Rpc, broker, headers

__all__ = ["broker"]  # the fixture, shared with test_ws_endpoint

EDIT = fake_script(
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    summary="Changed a() to return 10.\n\nThe rest of the story: " + "more words " * 40,
)


async def wait(rpc: Rpc, **params: object) -> dict[str, object]:
    """``wait`` may take longer than Rpc's usual 10 s on a loaded machine."""
    return await asyncio.wait_for(rpc.call("wait", **params), 90)


async def test_lines_short_inspect_details_and_text_diff(broker: Endpoint, repo: Path) -> None:
    async with connect(broker.url, additional_headers=headers(broker)) as ws:
        rpc = Rpc(ws)
        made = (await rpc.call("delegate", instruction=EDIT, cwd=str(repo)))["result"]
        assert set(made) == {"task"} and set(made["task"]) == {"id", "state", "worker", "next"}
        tid = made["task"]["id"]
        watched = (await rpc.call("watch", ids=[tid], replay=False))["result"]
        assert watched["tasks"][0]["id"] == tid and "title" not in watched["tasks"][0]

        woke = (await wait(rpc, ids=[tid], timeout=60))["result"]["task"]
        assert woke["state"] == "review" and "message" not in woke and "completion" not in woke
        assert woke["summary"].startswith("Changed a() to return 10. … (+")
        assert woke["summary"].endswith(" chars: inspect detail=summary)")

        short = (await rpc.call("inspect", id=tid[:6]))["result"]
        assert short["state"] == "review" and short["completion"] == "completed"
        assert short["diff"] == "app.py +1 -1, 1 hunk pending" and short["attempts"] == 1
        assert "detail" not in short and "id" not in short
        detailed = await rpc.call("inspect", id=tid, detail=["summary", "events"], events=3)
        sections = detailed["result"]["detail"]
        assert sections["summary"].startswith("Changed a() to return 10.\n\nThe rest")
        assert len(sections["events"]) == 3 and sections["eventCount"] > 3
        assert sections["events"][-1]["seq"] == sections["eventCount"]
        bad = (await rpc.call("inspect", id=tid, detail="diff"))["error"]
        assert bad["code"] == p.INVALID_PARAMS and "attempts" in bad["message"]

        listed = (await rpc.call("tasks"))["result"]["tasks"]
        assert listed == [{"id": tid, "state": "review", "title": "Do the scripted work",
                           "next": ["diff", "accept", "reject", "reply"]}]  # fmt: skip
        full = (await rpc.call("tasks", full=True))["result"]["tasks"][0]
        assert full["instruction"] == EDIT and None not in full.values()

        text = (await rpc.call("diff", id=tid, format="text"))["result"]["text"]
        assert text.splitlines()[0] == f"task {tid} (review), final diff"
        assert "+    return 10" in text and text.endswith("next: diff, accept, reject, reply")
        rest = (await rpc.call("diff", id=tid, format="text", offset=len(text) - 5))["result"]
        assert rest["text"] == "reply"

        accepted = (await rpc.call("accept", id=tid))["result"]
        assert set(accepted) == {"task", "applied"} and accepted["task"]["state"] == "applied"


async def test_wait_wakes_on_the_first_and_refuses_bad_params(broker: Endpoint, repo: Path) -> None:
    async with connect(broker.url, additional_headers=headers(broker)) as ws:
        rpc = Rpc(ws)
        slow = (await rpc.call("delegate", instruction=fake_script({"sleep": 60}), cwd=str(repo)))[
            "result"
        ]["task"]["id"]
        quick = fake_script({"sleep": 0.5}, summary="quick")
        fast = (await rpc.call("delegate", instruction=quick, cwd=str(repo)))["result"]["task"]
        woke = (await wait(rpc, ids=[slow, fast["id"], slow], timeout=60))["result"]
        assert woke == {"task": {"id": fast["id"], "state": "answered", "summary": "quick",
                                 "next": ["inspect", "retry"]}}  # fmt: skip
        late = (await wait(rpc, ids=[slow], timeout=0.2))["result"]
        assert late["timeout"] == 0.2 and [t["id"] for t in late["tasks"]] == [slow]
        for params, code in [
            ({}, p.INVALID_PARAMS),
            ({"ids": []}, p.INVALID_PARAMS),
            ({"ids": [slow], "timeout": 7200}, p.INVALID_PARAMS),
            ({"ids": [slow], "until": "settled"}, p.INVALID_PARAMS),
            ({"ids": ["zzzzzz"]}, p.UNKNOWN_TASK),
        ]:
            assert (await rpc.call("wait", **params))["error"]["code"] == code, params
        await rpc.call("cancel", id=slow)


@pytest.fixture
def other_repo(tmp_path: Path) -> Path:
    root = tmp_path / "other"
    root.mkdir()
    (root / "x.txt").write_text("x\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    return root


def serve(root: Path) -> tuple[subprocess.Popen[str], dict[str, object]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "baton.cli", "serve", "--root", str(root), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc, json.loads(proc.stdout.readline())


async def test_wait_on_a_task_another_broker_supervises(
    baton_home: Path, repo: Path, other_repo: Path, tmp_path: Path
) -> None:
    """Broker B never sees the events of broker A's task; its ``wait`` reads the store."""
    a, _ = serve(repo)
    b, b_ready = serve(other_repo)
    try:
        made = await asyncio.to_thread(
            baton, "delegate", "--cwd", str(repo), fake_script({"sleep": 2}, summary="by A")
        )
        assert made.returncode == 0, made.stderr
        tid = made.stdout.strip()
        run = tmp_path / "run" / "baton"
        (info,) = [d for d in discovery.live_brokers(run) if d.pid == b_ready["pid"]]
        assert info.roots == [str(other_repo)]
        async with await Client.connect(info) as client:
            res = await asyncio.wait_for(client.call("wait", ids=[tid], timeout=60), 90)
        assert res == {"task": {"id": tid, "state": "answered", "summary": "by A",
                                "next": ["inspect", "retry"]}}  # fmt: skip
    finally:
        for proc in (a, b):
            proc.terminate()
            proc.wait(10)
        stop_brokers(tmp_path / "run" / "baton")
