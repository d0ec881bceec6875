"""What running an attempt on a Ray cluster costs, beside the same attempt run locally.

A Ray cluster of three nodes on this host (``ray.cluster_utils.Cluster``, loopback only: a
head with no agent resources and two nodes with ``{fake = 4}``) and one in-process broker
with two profiles of the fake agent: ``here`` (local) and ``there`` (``runner = "ray"``).
Rounds alternate which goes first; in each, one task per profile streams ``--lines`` lines
at ``--rate`` lines/s, each stamped with the time the agent printed it. Figures, Ray's
beside the local one (the floor: the same broker, the same agent, run here):

- delegate → agent started: ``Supervisor.delegate`` called to the fake agent's first act
  (its run-log line, ``BATON_FAKE_RUNLOG``): for Ray, the relay's start and connect, the
  bundle, the actor placed and the checkout made on the node, the agent spawned there;
- agent line → editor (p99): the stamp in a line to a subscriber of the broker's events
  receiving it (the language server and the websocket hold such a subscription);
- Ray's memory per node (RSS of the cluster's processes over its three nodes, idle) and the
  relay's (the local end of one remote attempt, a Ray driver), as measures.

Needs the extra: ``pip install 'baton-lsp[ray]'``.
Run: .venv/bin/python benchmarks/ray_runner.py [--rounds 5] [--lines 200] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from figures import figure, measure, median, pct

ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@l"}
ENV |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@l"}


def make_repo(base: Path) -> Path:
    repo = base / "repo"
    repo.mkdir()
    for i in range(20):
        (repo / f"f{i}.txt").write_text(f"file {i}\n" * 20)
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env={**os.environ, **ENV})
    return repo


def start_cluster(scratch: Path) -> Any:
    from ray.cluster_utils import Cluster

    from baton.process.ray_relay import loopback_only
    from baton.process.ray_runner import LOOPBACK_ENV

    (scratch / "ray").mkdir()
    os.environ.update(RAY_TMPDIR=str(scratch), RAY_USAGE_STATS_ENABLED="0")
    os.environ.update({LOOPBACK_ENV: "1", "BATON_NODE_HOME": str(scratch / "nodes")})
    loopback_only()
    ip = {"node_ip_address": "127.0.0.1"}
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False, **ip}
    )
    for _ in range(2):
        cluster.add_node(num_cpus=1, resources={"fake": 4}, **ip)
    cluster.wait_for_nodes()
    return cluster


def ray_processes() -> list[psutil.Process]:
    """The cluster's processes: this process's descendants that are Ray's."""
    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            line = " ".join(p.cmdline())
        except psutil.Error:
            continue
        if "ray" in line and "baton" not in line:
            out.append(p)
    return out


def rss_mb(procs: list[psutil.Process]) -> float:
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total / 2**20


async def one_task(
    sup: Any, repo: Path, worker: str, runlog: Path, lines: int, rate: float
) -> tuple[float, list[float], float]:
    """Delegate one streaming task to ``worker``: (delegate → agent started in ms, each
    line's latency in ms, the largest relay RSS seen in MB)."""
    from baton.runtime.requests import DelegateRequest

    script = {"steps": [{"stream": lines, "rate": rate, "size": 64}, {"say": "done"}]}
    prompt = "bench\n```baton-fake\n" + json.dumps(script) + "\n```\n"
    before = len(runlog.read_text().splitlines()) if runlog.exists() else 0
    sub = sup.subscribe()
    began = time.time()
    task = await sup.delegate(DelegateRequest(instruction=prompt, root=str(repo), worker=worker))
    latencies: list[float] = []
    relay = 0.0
    try:
        while len(latencies) < lines:
            event = await asyncio.wait_for(sub.get(), 120)
            if event is None:
                raise SystemExit("the subscription was cut off")
            now = time.time()
            text = str(event.data.get("text") or "") if event.task_id == task.id else ""
            stamp = text.split(" ", 1)[0]
            if stamp.replace(".", "", 1).isdigit():
                latencies.append((now - float(stamp)) * 1000)
                if len(latencies) % 50 == 1:
                    relays = [
                        p
                        for p in psutil.Process().children(recursive=True)
                        if "ray_relay" in " ".join(_cmdline(p))
                    ]
                    relay = max(relay, rss_mb(relays))
    finally:
        sub.close()
    runs = runlog.read_text().splitlines()[before:]
    started = (json.loads(runs[0])["time"] - began) * 1000
    deadline = time.monotonic() + 120
    while (await sup.get(task.id)).state.value not in ("review", "answered", "failed"):
        if time.monotonic() > deadline:
            raise SystemExit(f"task {task.id} did not end")
        await asyncio.sleep(0.05)
    return started, latencies, relay


def _cmdline(p: psutil.Process) -> list[str]:
    try:
        cmd: list[str] = p.cmdline()
    except psutil.Error:
        return []
    return cmd


async def bench(args: argparse.Namespace, scratch: Path, cluster: Any) -> None:
    from baton.runtime.supervisor import Supervisor

    runlog = scratch / "runs.jsonl"
    config = scratch / "config.toml"
    config.write_text(
        'default_worker = "here"\n'
        f'[profiles.here]\nprovider = "fake"\nenv = {{ BATON_FAKE_RUNLOG = "{runlog}" }}\n'
        f'[profiles.there]\nprovider = "fake"\nenv = {{ BATON_FAKE_RUNLOG = "{runlog}" }}\n'
        f'runner = "ray"\nray_address = "{cluster.address}"\nray_resources = {{ fake = 1 }}\n'
    )
    os.environ.update(BATON_HOME=str(scratch / "home"), BATON_CONFIG=str(config))
    repo = make_repo(scratch)
    sup = Supervisor(scratch / "home")
    await sup.start()
    started: dict[str, list[float]] = {"here": [], "there": []}
    lines: dict[str, list[float]] = {"here": [], "there": []}
    relay = 0.0
    try:
        await one_task(sup, repo, "there", runlog, 10, args.rate)  # a first connect, untimed
        for r in range(args.rounds):
            for worker in ("here", "there") if r % 2 == 0 else ("there", "here"):
                s, lat, rel = await one_task(sup, repo, worker, runlog, args.lines, args.rate)
                started[worker].append(s)
                lines[worker].extend(lat)
                relay = max(relay, rel)
    finally:
        await sup.close()
    n = args.rounds
    figure(
        "delegate → agent started, on Ray",
        median(started["there"]),
        median(started["here"]),
        "the same broker running it here",
        runs=n,
    )
    figure(
        "agent line → editor p99, on Ray",
        pct(lines["there"], 99),
        pct(lines["here"], 99),
        "the same agent run here",
        stat="p99",
        runs=len(lines["there"]),
        of="lines",
    )
    procs = ray_processes()
    measure("Ray per node (idle RSS, of 3 nodes)", rss_mb(procs) / 3, "MB")
    measure("Ray processes per node (idle, of 3 nodes)", len(procs) / 3, "processes")
    measure("relay per remote attempt (RSS, on the broker's host)", relay, "MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--lines", type=int, default=200)
    ap.add_argument("--rate", type=float, default=100.0)
    ap.add_argument("--quick", action="store_true", help="2 rounds of 100 lines")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.lines = 2, 100
    try:
        import ray  # noqa: F401
    except ImportError:
        raise SystemExit("needs the Ray extra: pip install 'baton-lsp[ray]'") from None
    scratch = Path(tempfile.mkdtemp(prefix="bray"))  # short: Ray's socket paths must fit
    cluster = start_cluster(scratch)
    try:
        asyncio.run(bench(args, scratch, cluster))
    finally:
        cluster.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
