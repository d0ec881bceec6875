"""The websocket's ``bench`` (issue 21): inline cases on two workers answer ``{run, tasks}``
at once; ``bench`` with ``run`` reads the results as they stand; bad params are refused."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect

from baton.surfaces.ws import protocol as p
from baton.surfaces.ws.endpoint import Endpoint
from tests.e2e.test_cli_bench import RIGHT, workers
from tests.e2e.test_ws_endpoint import Rpc, broker, headers

__all__ = ["broker"]

CASES = [
    {"key": "right", "instruction": "Write the answer", "checks": [["python3", "-c", RIGHT]]},
    {"key": "gone", "instruction": "Write it", "checks": [{"name": "gone", "argv": ["nope-x"]}]},
]


async def results(rpc: Rpc, run: str) -> dict[str, Any]:
    deadline = time.monotonic() + 90
    while True:
        res = (await rpc.call("bench", run=run))["result"]
        if res["done"] or time.monotonic() > deadline:
            return dict(res)
        await asyncio.sleep(0.2)


async def test_bench_answers_at_once_and_reads_a_run(
    broker: Endpoint, repo: Path, tmp_path: Path
) -> None:
    workers(repo, tmp_path)
    with (repo / ".baton.toml").open("a") as f:
        f.write('[profiles.off]\nprovider = "fake"\nenabled = false\n')
    async with connect(broker.url, additional_headers=headers(broker)) as ws:
        rpc = Rpc(ws)
        made = await rpc.call(
            "bench", cases=CASES, name="inline-smoke", workers=["good", "bad"], cwd=str(repo)
        )
        started = made["result"]
        assert set(started) == {"run", "suite", "tasks"} and started["suite"] == "inline-smoke"
        assert [(t["case"], t["worker"], t["n"]) for t in started["tasks"]] == [
            ("right", "good", 1), ("right", "bad", 1), ("gone", "good", 1), ("gone", "bad", 1),
        ]  # fmt: skip
        res = await results(rpc, started["run"])
        assert res["done"] and res["path"] is None and res["root"] == str(repo.resolve())
        table = {line["worker"]: line for line in res["table"]}
        assert (table["good"]["passed"], table["good"]["run"], table["good"]["rate"]) == (1, 2, 0.5)
        assert (table["bad"]["passed"], table["bad"]["run"], table["bad"]["rate"]) == (0, 2, 0.0)
        gone = [t["reason"] for t in res["tasks"] if t["case"] == "gone"]
        assert gone == ["checks failed: gone could not start ([Errno 2] No such file or "
                        "directory: 'nope-x')"] * 2  # fmt: skip
        stop = (await rpc.call("bench", run=started["run"], stop=True))["result"]
        assert stop["stopped"] == []  # nothing left to stop

        async def refused(**params: Any) -> dict[str, Any]:
            err = (await rpc.call("bench", **params))["error"]
            assert err["code"] in (p.INVALID_PARAMS, p.UNKNOWN_TASK), err
            return dict(err)

        both = await refused(suite="x.toml", cases=CASES, workers=["good"], cwd=str(repo))
        assert "one" in both["message"]
        unknown = await refused(cases=CASES, workers=["good", "ghost"], cwd=str(repo))
        assert "unknown worker 'ghost'" in unknown["message"]
        bad_case = await refused(cases=[{"key": "k", "checks": [["true"]]}], workers=["good"])
        assert "case k: no instruction" in bad_case["message"]
        bad_check = await refused(
            cases=[{"instruction": "x", "checks": ["true"]}], workers=["good"]
        )
        assert "argv must be a non-empty list of strings" in bad_check["message"]
        mixed = await refused(run=started["run"], workers=["good"])
        assert "reads a run" in mixed["message"]
        nowhere = await refused(run="bnope")
        assert "no bench run" in nowhere["message"]
        missing = await refused(suite="missing.toml", workers=["good"], cwd=str(repo))
        assert "cannot read it" in missing["message"]
        (tmp_path / "broken.toml").write_text("[[case]\nkey =")
        broken = await refused(suite=str(tmp_path / "broken.toml"), workers=["good"])
        assert "not valid TOML" in broken["message"]
        unchecked = await refused(cases=[{"instruction": "do it"}], workers=["good"])
        assert "has no checks and the project has no verify step" in unchecked["message"]
        runs = await refused(cases=CASES, workers=["good"], runs=0)
        assert "runs" in runs["message"]

        # A worker routing refuses (disabled) stops the run: what it delegated is cancelled.
        before = {t["id"] for t in started["tasks"]}
        off = await refused(cases=CASES, workers=["good", "off"], cwd=str(repo))
        assert "case right on off: worker 'off' is disabled" in off["message"]
        assert "1 task(s) already delegated were cancelled" in off["message"]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            listed = (await rpc.call("tasks", archived=True))["result"]["tasks"]
            new = [t["state"] for t in listed if t["id"] not in before]
            if new == ["cancelled"]:
                break
            await asyncio.sleep(0.1)
        assert new == ["cancelled"]
