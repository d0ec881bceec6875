"""Broker figures with 20 concurrent fake agents streaming.

Prints:
- delegate → task id latency (median, p99; target p99 ≤ 10 ms);
- agent output line → subscriber latency (median, p99; target p99 ≤ 5 ms);
- events persisted per second while streaming (the store's own ceiling is in store_events.py);
- broker memory (RSS) idle and with 50 running tasks (targets ≤ 80 MB idle, ≤ 1 MB per task).

Beside delegate → id, its floor, measured in the same loop (alternating with each
delegation): the simplest durable record of a task answering — one INSERT of a row of the
same size committed by the standard sqlite3 module in a worker thread (WAL,
``synchronous=NORMAL``), awaited from the event loop.

Run: .venv/bin/python benchmarks/broker.py [--agents 20] [--seconds 5] [--rate 100] [--quick]
[--server-path DIR]  (another checkout's broker: ``benchmarks/figures.py``)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

from baton.config.profiles import default_profiles
from baton.core.events import EventType
from baton.core.lifecycle import TaskState
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Limits, Supervisor
from figures import add_server_path, fake_repo, figure, measure, use_server


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def script(*steps: dict[str, object]) -> str:
    return "bench\n```baton-fake\n" + json.dumps({"steps": list(steps)}) + "\n```\n"


class BareRecord:
    """The floor of delegate → id: one committed INSERT of a task-sized row, off the loop."""

    def __init__(self, path: Path) -> None:
        import sqlite3

        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.execute("CREATE TABLE tasks (id TEXT PRIMARY KEY, body TEXT)")
        self.n = 0

    def _insert(self, body: str) -> None:
        self.n += 1
        with self.conn:
            self.conn.execute("INSERT INTO tasks VALUES (?, ?)", (str(self.n), body))

    async def record(self, body: str) -> float:
        start = time.perf_counter()
        await asyncio.to_thread(self._insert, body)
        return (time.perf_counter() - start) * 1000


async def wait_state(sup: Supervisor, ids: list[str], states: set[TaskState]) -> None:
    while True:
        tasks = [await sup.get(i) for i in ids]
        if all(t.state in states for t in tasks):
            return
        await asyncio.sleep(0.05)


async def main(
    agents: int,
    seconds: float,
    rate: float,
    delegations: int = 20,
    interval: float = 0.2,
    held: int = 50,
) -> None:
    base = Path(tempfile.mkdtemp(prefix="baton-bench-"))
    home = base / "state"
    repo = fake_repo(base / "repo", {f"f{i}.txt": f"file {i}\n" * 20 for i in range(20)})
    profiles = default_profiles()
    profiles["fake"].concurrency = 200
    sup = Supervisor(home, profiles=profiles, limits=Limits(stall_after=120))
    await sup.start()
    me = psutil.Process()
    await asyncio.sleep(0.5)
    idle_rss = me.memory_info().rss / 2**20

    # 1. Streaming: N agents, each `rate` lines/s for `seconds`; one subscriber for everything.
    latencies: list[float] = []  # lines while only the agents stream (all of them running)
    busy_latencies: list[float] = []  # lines while tasks are also being delegated
    steady = delegating = False
    sub = sup.subscribe(None)

    async def consume() -> None:
        async for e in sub:
            if e.type == EventType.TEXT and e.data.get("delta"):
                stamp = str(e.data.get("text", "")).split(" ", 1)[0]
                try:
                    ms = (time.time() - float(stamp)) * 1000
                except ValueError:
                    continue
                if delegating:
                    busy_latencies.append(ms)
                elif steady:  # not while the streamers themselves are still being set up
                    latencies.append(ms)

    consumer = asyncio.create_task(consume())
    n = int(seconds * rate)
    streamers = []
    for _ in range(agents):
        t = await sup.delegate(DelegateRequest(script({"stream": n, "rate": rate}), str(repo)))
        streamers.append(t.id)
    await wait_state(sup, streamers, {TaskState.RUNNING, TaskState.ANSWERED, TaskState.FAILED})
    steady = True
    committed0, t0 = sup.bus.committed, time.monotonic()

    # 2. Half-way, while they stream: delegate latency (tasks that answer at once; each
    #    also makes a snapshot, a worktree and an agent process, which loads the machine).
    await asyncio.sleep(seconds / 2)
    delegating = True
    delegate_ms: list[float] = []
    floor_ms: list[float] = []
    bare = BareRecord(base / "bare.db")
    quick = []
    body = json.dumps((await sup.get(streamers[0])).to_json())  # a task row's size
    for i in range(delegations):
        if i % 2:
            floor_ms.append(await bare.record(body))
        start = time.perf_counter()
        t = await sup.delegate(DelegateRequest(script({"say": "ok"}), str(repo)))
        delegate_ms.append((time.perf_counter() - start) * 1000)
        if i % 2 == 0:
            floor_ms.append(await bare.record(body))
        quick.append(t.id)
        await asyncio.sleep(interval)

    await wait_state(sup, streamers, {TaskState.ANSWERED, TaskState.FAILED})
    elapsed = time.monotonic() - t0
    committed = sup.bus.committed - committed0
    await wait_state(sup, quick, {TaskState.ANSWERED, TaskState.FAILED})
    overflowed = sub.overflowed
    sub.close()
    await consumer

    # 3. Memory with `held` (50) running (hanging) tasks.
    hanging = []
    for _ in range(held):
        t = await sup.delegate(DelegateRequest(script({"say": "up"}, {"hang": True}), str(repo)))
        hanging.append(t.id)
    await wait_state(sup, hanging, {TaskState.RUNNING, TaskState.FAILED})
    await asyncio.sleep(1.0)
    busy_rss = me.memory_info().rss / 2**20
    for tid in hanging:
        await sup.cancel(tid)
    await wait_state(sup, hanging, {TaskState.CANCELLED})
    await sup.close()

    if overflowed:
        print("!!! the subscriber fell more than its queue behind and was cut off")
    print(f"agents: {agents} x {rate:.0f} lines/s for {seconds:.0f} s ({agents * n} lines)")
    print(f"delegations: {delegations}, one every {interval * 1000:.0f} ms, each answering at once")
    print(
        f"delegate_ms_median: {statistics.median(delegate_ms):.2f}  "
        f"p99: {pct(delegate_ms, 99):.2f} (target p99 <= 10)"
    )
    print(
        f"line_to_subscriber_ms_median: {statistics.median(latencies):.2f}  "
        f"p99: {pct(latencies, 99):.2f} (target p99 <= 5; {len(latencies)} lines, "
        "agents streaming only)"
    )
    if busy_latencies:
        print(
            f"line_to_subscriber_while_delegating_ms_median: "
            f"{statistics.median(busy_latencies):.2f}  p99: {pct(busy_latencies, 99):.2f}"
        )
    print(
        f"events_persisted_per_second_while_streaming: {committed / elapsed:.0f} "
        f"(offered load ~{agents * rate:.0f}/s; store ceiling: benchmarks/store_events.py)"
    )
    for stat, p in (("median", None), ("p99", 99)):
        figure(
            f"delegate → id in the broker, {agents} tasks streaming",
            pct(delegate_ms, p) if p else statistics.median(delegate_ms),
            pct(floor_ms, p) if p else statistics.median(floor_ms),
            "one committed sqlite3 INSERT of a task row in a thread, awaited",
            runs=delegations,
            stat=stat,
        )
    print(f"broker_rss_idle_mb: {idle_rss:.1f} (target <= 80)")
    print(
        f"broker_rss_{held}_running_mb: {busy_rss:.1f}  per_task_mb: "
        f"{(busy_rss - idle_rss) / held:.2f} (target <= 1.0)"
    )
    measure("line → subscriber, agents streaming, median", statistics.median(latencies), "ms")
    measure("line → subscriber, agents streaming, p99", pct(latencies, 99), "ms")
    if busy_latencies:
        measure("line → subscriber while delegating, p99", pct(busy_latencies, 99), "ms")
    measure("events persisted while streaming", committed / elapsed, "/s")
    measure("broker RSS idle", idle_rss, "MB")
    measure(f"broker RSS per running task ({held} held)", (busy_rss - idle_rss) / held, "MB")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--agents", type=int, default=20)
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--rate", type=float, default=100)
    p.add_argument("--delegations", type=int, default=20)
    p.add_argument("--interval", type=float, default=0.2, help="seconds between delegations")
    p.add_argument("--quick", action="store_true", help="2 agents, 1 s, 6 delegations, 5 held")
    add_server_path(p)
    a = p.parse_args()
    use_server(a.server_path)
    held = 50
    if a.quick:
        a.agents, a.seconds, a.delegations, a.interval, held = 2, 1.0, 6, 0.05, 5
    asyncio.run(main(a.agents, a.seconds, a.rate, a.delegations, a.interval, held))
    sys.exit(0)
