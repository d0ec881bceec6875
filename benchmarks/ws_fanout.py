"""Websocket fan-out: 50 subscribers x 20 streaming fake tasks through a headless broker.

A real `baton serve` process; subscribers are real websocket clients spread over several
processes (so the clients' own parsing does not queue up behind one event loop): a minimal
RFC 6455 client by default, or the websockets library with `--client websockets`.

Measured in ``--rounds`` rounds of each side, Baton's and the floor's alternating (Baton,
floor, floor, Baton, …), each round with subscriber processes of its own:

- Baton's round: the subscribers watch the broker, the 20 streaming tasks are delegated and
  waited for. Delivery latency, event stamped in the broker (its commit) → received by a
  subscriber; events lost or out of order (target: none), per subscriber and task; broker
  CPU seconds per 1,000 events (everything the broker did meanwhile: worktrees, tailing,
  diffs). And, while every task streams, delegate → id over a websocket connection of its
  own (a small task, one every ``--gap`` seconds), each beside the same request to the bare
  server below (the order alternating), which answers with the answer Baton gave.
- The floor's round: a bare websockets server pushing frames of the same shape to the same
  number of subscribers (``websockets.broadcast``), the same number per task at the same
  rate, what arrives while it writes going into one ``events`` frame as the broker's group
  commit does; beside it the same 20 fake agents, started by a raw fork/exec, stream the
  same script to files nobody reads (the machine carries the agents in both rounds).

The figures are medians over the rounds of each round's median and p99, beside the
floor's. Goals: fan-out p99 ≤ 1.5x the bare server's; delegate → id p99 ≤ 2x the bare
round trip.

Run: .venv/bin/python benchmarks/ws_fanout.py [--subscribers 50] [--tasks 20] [--events 500]
[--rounds 5]
[--quick] [--server-path DIR]  (another checkout's broker: ``benchmarks/figures.py``)
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from websockets.asyncio.client import connect

from figures import (
    add_server_path,
    broker_ready,
    fake_workspace,
    figure,
    load,
    measure,
    serve_broker,
    use_server,
)
from ws_clients import collect, rpc, subscribe

#: A bare websockets server: answers ``watch``; on ``start`` pushes ``events`` frames per
#: task for ``tasks`` tasks at ``rate`` a second each to every watcher (what arrives while it
#: writes goes into one ``events`` frame, as the broker's group commit does), then answers;
#: answers ``delegate`` with the answer Baton gave (``argv[4]``, JSON) at once.
BARE_SERVER = r"""
import asyncio, json, sys, time
from websockets.asyncio.server import broadcast, serve

TASKS, EVENTS, RATE = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
DELEGATED = json.loads(sys.argv[4])
watchers = set()
pending = []

def flush():
    batch = pending[:]
    pending.clear()
    if len(batch) == 1:
        params = {"subscription": 0, "event": batch[0]}
        msg = {"jsonrpc": "2.0", "method": "event", "params": params}
    else:
        params = {"subscription": 0, "events": batch}
        msg = {"jsonrpc": "2.0", "method": "events", "params": params}
    broadcast(watchers, json.dumps(msg))

async def stream(n):
    loop = asyncio.get_running_loop()
    start = loop.time()
    for seq in range(1, EVENTS + 1):
        await asyncio.sleep(max(0.0, start + seq / RATE - loop.time()))
        event = {"taskId": f"t{n}", "seq": seq, "ts": time.time(), "type": "text",
                 "attempt": 1, "data": {"text": "x" * 48, "delta": True}}
        if not pending:
            loop.call_soon(flush)
        pending.append(event)

async def answer(ws):
    async for frame in ws:
        msg = json.loads(frame)
        if msg["method"] == "watch":
            watchers.add(ws)
            result = {"subscription": 0, "tasks": [], "replayed": {}}
        elif msg["method"] == "delegate":
            result = DELEGATED
        else:
            await asyncio.gather(*(stream(n) for n in range(TASKS)))
            result = {"done": True}
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}))
    watchers.discard(ws)

async def main():
    async with serve(answer, "127.0.0.1", 0, compression=None, max_size=None) as server:
        print(json.dumps({"url": f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"}))
        sys.stdout.flush()
        await asyncio.Future()

asyncio.run(main())
"""

#: What each round of Baton's delegates meanwhile, to time delegate → id (it answers at once).
SMALL = "bench\n```baton-fake\n" + json.dumps({"steps": [{"say": "ok"}]}) + "\n```\n"


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def script(events: int, rate: float, settle: float) -> str:
    # Each agent waits `settle` seconds before streaming, so that the figures describe the
    # fan-out of 20 streaming tasks, not the minute of setting 20 worktrees up (--settle 0
    # measures both together).
    steps: list[dict[str, Any]] = [{"sleep": settle}] if settle else []
    steps.append({"stream": events, "rate": rate, "size": 48})
    return "bench\n```baton-fake\n" + json.dumps({"steps": steps}) + "\n```\n"


def stored_events(url: str, token: str, task_id: str) -> tuple[str, int]:
    """A task's state and how many events the broker stored for it.

    Asked with ``inspect``'s ``detail``; a broker from before ``detail`` (it refuses the
    parameter) answers the whole record, with the count and the task at its top.
    """
    ask = {"id": task_id, "detail": ["events"], "events": 0}
    info = asyncio.run(rpc(url, token, [("inspect", ask)]))[0]
    if "detail" in info:
        return info["state"], info["detail"]["eventCount"]
    info = asyncio.run(rpc(url, token, [("inspect", {"id": task_id, "events": 0})]))[0]
    return info["task"]["state"], info["eventCount"]


def raw_agents(args: argparse.Namespace, folder: Path) -> list[subprocess.Popen[bytes]]:
    """The same fake agents as Baton's round runs, each started by a raw fork/exec with the
    same script, writing to a file of its own: the load they put on the machine, without
    Baton."""
    prompt = folder / "prompt.md"
    prompt.write_text(script(args.events, args.rate, args.settle))
    argv = [sys.executable, "-P", "-m", "baton.agents.fake_agent", "--prompt-file", str(prompt)]
    agents = []
    for n in range(args.tasks):
        out = folder / f"agent-{n}.out"
        with out.open("wb") as fh:
            agents.append(
                subprocess.Popen(
                    argv,
                    cwd=folder,
                    stdin=subprocess.DEVNULL,
                    stdout=fh,
                    stderr=subprocess.DEVNULL,
                    env=os.environ | {"BATON_TASK_DIR": str(folder / f"task-{n}")},
                )
            )
    return agents


def bare_round(args: argparse.Namespace, url: str) -> list[float]:
    """Delivery latencies (ms) of the same frames pushed by the bare websockets server to
    subscriber processes of their own (as many, the same client), while the same fake
    agents stream beside it (their streaming and the bare server's begin together)."""
    procs, done, out = subscribe(args, url, "")
    with tempfile.TemporaryDirectory(prefix="baton-wsbench-raw-") as tmp:
        agents = raw_agents(args, Path(tmp))
        time.sleep(args.settle)
        asyncio.run(rpc(url, "", [("start", {})]))
        for agent in agents:
            agent.wait(60)
    time.sleep(1.0)
    return [x for r in collect(procs, done, out) for _, x in r["latencies"]]


async def delegations(
    url: str,
    token: str,
    bare: str,
    cwd: str,
    streams: int,
    settle: float,
    seconds: float,
    gap: float,
) -> tuple[list[float], list[float]]:
    """delegate → id round trips (ms) to the broker, each beside the same request to the
    bare server (the order alternating), one pair every ``gap`` seconds for ``seconds``
    from ``settle`` seconds after all ``streams`` tasks run: while every task streams."""
    baton_ms: list[float] = []
    floor_ms: list[float] = []
    auth = {"Authorization": f"Bearer {token}"}
    async with connect(url, additional_headers=auth) as ws, connect(bare) as bws:
        running = {"state": ["running"], "limit": streams}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            await ws.send(
                json.dumps({"jsonrpc": "2.0", "id": 0, "method": "tasks", "params": running})
            )
            if len(json.loads(await ws.recv())["result"]["tasks"]) >= streams:
                break
            await asyncio.sleep(0.2)
        await asyncio.sleep(settle)
        end = time.monotonic() + seconds
        n = 0
        while time.monotonic() < end:
            n += 1
            request = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": n,
                    "method": "delegate",
                    "params": {"instruction": SMALL, "cwd": cwd},
                }
            )
            for ours in (True, False) if n % 2 else (False, True):
                conn = ws if ours else bws
                t0 = time.perf_counter()
                await conn.send(request)
                answer = json.loads(await conn.recv())
                (baton_ms if ours else floor_ms).append((time.perf_counter() - t0) * 1000)
                assert answer["result"]["task"]["id"], answer
            await asyncio.sleep(gap)
    return baton_ms, floor_ms


def baton_round(
    args: argparse.Namespace, url: str, token: str, bare: str, repo: str, broker: Any
) -> dict[str, Any]:
    """One round through the broker: subscribers watching, the streaming tasks delegated
    and waited for, delegate → id timed while they stream; what was measured."""
    procs, done, out = subscribe(args, url, token, bool(args.dump))
    cpu0 = sum(broker.cpu_times()[:2])
    t0 = time.monotonic()
    calls = [
        ("delegate", {"instruction": script(args.events, args.rate, args.settle), "cwd": repo})
        for _ in range(args.tasks)
    ]
    ids = [r["task"]["id"] for r in asyncio.run(rpc(url, token, calls))]
    # Delegations timed from the streaming's start (each agent waits --settle seconds after
    # its start) to a second before its end; then until none is busy, asked twice a second
    # for one task, so that the harness does not load the broker it measures.
    stream_s = args.events / args.rate
    delegated = asyncio.run(
        delegations(url, token, bare, repo, args.tasks, args.settle + 0.5, stream_s - 1.5, args.gap)
    )
    busy = {"state": ["queued", "preparing", "running"], "limit": 1}
    while asyncio.run(rpc(url, token, [("tasks", busy)]))[0]["tasks"]:
        time.sleep(0.5)
    took = time.monotonic() - t0
    cpu = sum(broker.cpu_times()[:2]) - cpu0
    time.sleep(1.0)  # let the last events arrive
    results = collect(procs, done, out)

    inspect = [stored_events(url, token, i) for i in ids]
    stored = {i: count for i, (_, count) in zip(ids, inspect, strict=True)}
    lost = disorder = 0
    for r in results:
        for tid in ids:
            seqs = r["seqs"].get(tid, [])
            lost += stored[tid] - len(set(seqs))
            disorder += sum(1 for a, b in itertools.pairwise(seqs) if b != a + 1)
    lat = [x for r in results for _, x in r["latencies"]]
    # The window in which every task streams: from the last task's first text event to
    # the first task's last one (no worktree being made, no task ending).
    pages = asyncio.run(rpc(url, token, [("events", {"id": i}) for i in ids]))
    texts = [[e["ts"] for e in page["events"] if e["type"] == "text"] for page in pages]
    lo, hi = max(min(t) for t in texts), min(max(t) for t in texts)
    steady = [x for r in results for ts, x in r["latencies"] if lo <= ts <= hi]
    if args.dump:
        with open(args.dump, "a") as fh:
            for r in results:
                for sample in r["samples"]:
                    fh.write(json.dumps(sample) + "\n")
    return {
        "lat": lat,
        "steady": steady,
        "window": hi - lo,
        "lost": lost,
        "disorder": disorder,
        "stored": sum(stored.values()),
        "states": {state for state, _ in inspect},
        "cpu": cpu,
        "took": took,
        "delegate": delegated[0],
        "floor delegate": delegated[1],
    }


def stats(values: list[float]) -> str:
    if not values:
        return "none"
    return (
        f"median {statistics.median(values):.2f}  p99 {pct(values, 99):.2f}  "
        f"max {max(values):.2f}  ({len(values)})"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subscribers", type=int, default=50)
    ap.add_argument("--procs", type=int, default=5)
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--events", type=int, default=500, help="streamed events per task")
    ap.add_argument("--rate", type=float, default=100.0, help="events per second per task")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of each (Baton, the floor)")
    ap.add_argument("--gap", type=float, default=0.25, help="seconds between two timed delegations")
    ap.add_argument(
        "--settle", type=float, default=3.0, help="seconds each agent waits before streaming"
    )
    ap.add_argument("--dump", help="write each delivery as JSON: ts, latency ms, type, batch")
    ap.add_argument(
        "--client",
        choices=("lean", "websockets"),
        default="lean",
        help="subscriber implementation: a minimal RFC 6455 client (default) or the "
        "websockets library, whose per-frame cost in Python needs over a core for 50",
    )
    ap.add_argument("--quick", action="store_true", help="5 subscribers x 2 tasks: a smoke run")
    add_server_path(ap)
    args = ap.parse_args()
    use_server(args.server_path)
    if args.quick:
        args.subscribers, args.procs, args.tasks, args.events = 5, 1, 2, 300
        args.settle, args.rounds = 1.0, 1
    if args.dump:
        open(args.dump, "w").close()

    repo, env = fake_workspace("baton-wsbench-")
    server = serve_broker(repo, env)
    bare: subprocess.Popen[str] | None = None
    try:
        url, token = broker_ready(server)
        broker = psutil.Process(server.pid)
        # A first delegation (unmeasured) warms the broker and gives its answer's shape,
        # which the bare server answers delegate with.
        first = asyncio.run(
            rpc(url, token, [("delegate", {"instruction": SMALL, "cwd": str(repo)})])
        )
        argv = [str(args.tasks), str(args.events), str(args.rate), json.dumps(first[0])]
        bare = subprocess.Popen(
            [sys.executable, "-c", BARE_SERVER, *argv], stdout=subprocess.PIPE, env=env, text=True
        )
        assert bare.stdout is not None
        bare_url = json.loads(bare.stdout.readline())["url"]

        rounds: list[dict[str, Any]] = []
        floors: list[list[float]] = []
        for i in range(args.rounds):
            order = ("baton", "floor") if i % 2 == 0 else ("floor", "baton")
            for side in order:
                if side == "floor":
                    floors.append(bare_round(args, bare_url))
                else:
                    rounds.append(baton_round(args, url, token, bare_url, str(repo), broker))
            got, floor = rounds[-1], floors[-1]
            print(
                f"round {i + 1} ({' then '.join(order)}), load {' '.join(map(str, load()))}:\n"
                f"  baton delivery ms: {stats(got['lat'])}\n"
                f"  while all {args.tasks} stream ({got['window']:.1f} s): {stats(got['steady'])}\n"
                f"  floor delivery ms: {stats(floor)}\n"
                f"  delegate → id ms: {stats(got['delegate'])}\n"
                f"  bare round trip ms: {stats(got['floor delegate'])}\n"
                f"  stored {got['stored']}, lost {got['lost']}, out of order "
                f"{got['disorder']}, broker CPU {got['cpu']:.2f} s over {got['took']:.1f} s; "
                f"tasks ended {got['states']}",
                flush=True,
            )

        # (a broker from before the fan-out lag was reported has no "fanout", nor "delegate")
        health = asyncio.run(rpc(url, token, [("health", {})]))[0]
        fanout = health.get("fanout", {"batches": 0})
        answered = health.get("delegate", {"answers": 0})
        print(
            f"subscribers {args.subscribers} x tasks {args.tasks} "
            f"({args.events} streamed events each at {args.rate:g}/s), {args.rounds} rounds"
        )
        print(
            f"broker side, commit stamp -> written to every subscriber, ms: median "
            f"{fanout.get('median')}  p99 {fanout.get('p99')}  max {fanout.get('max')} "
            f"({fanout['batches']} batches)"
        )
        if answered["answers"]:
            print(
                f"broker side, delegate read -> answer written, ms: median "
                f"{answered['median']}  p99 {answered['p99']}  max {answered['max']} "
                f"({answered['answers']} delegations, the streaming ones too)"
            )
            measure("delegate read → answer written in the broker, p99", answered["p99"], "ms")
        if fanout["batches"]:
            measure("commit → written to every subscriber in the broker, p99", fanout["p99"], "ms")
        lost = sum(r["lost"] for r in rounds)
        total = sum(r["stored"] for r in rounds)
        cpu = sum(r["cpu"] for r in rounds)
        measure("events lost", lost, "events")
        measure("events out of order", sum(r["disorder"] for r in rounds), "events")
        steady = [pct(r["steady"], 99) for r in rounds if r["steady"]]
        if steady:
            measure("delivery while every task streams, p99", statistics.median(steady), "ms")
        measure("broker CPU per 1,000 events", cpu / total * 1000, "s")
        shape = f"{args.subscribers} subscribers x {args.tasks} tasks"
        for stat, p in (("median", None), ("p99", 99)):

            def value(v: list[float], p: int | None = p) -> float:
                return pct(v, p) if p else statistics.median(v)

            figure(
                f"websocket fan-out delivery, {shape}",
                statistics.median([value(r["lat"]) for r in rounds]),
                statistics.median([value(f) for f in floors]),
                "a bare websockets server pushing the same frames to the same subscribers",
                runs=args.rounds,
                stat=stat,
                of="rounds' " + stat + "s, Baton's and the floor's rounds alternating",
            )
        for stat, p in (("median", None), ("p99", 99)):

            def value(v: list[float], p: int | None = p) -> float:
                return pct(v, p) if p else statistics.median(v)

            figure(
                f"delegate → id over the websocket, {args.tasks} tasks streaming to "
                f"{args.subscribers} subscribers",
                statistics.median([value(r["delegate"]) for r in rounds]),
                statistics.median([value(r["floor delegate"]) for r in rounds]),
                "a bare websocket round trip (same request, same answer), interleaved",
                runs=args.rounds,
                stat=stat,
                of="rounds' " + stat + "s",
            )
    finally:
        if bare is not None:
            bare.terminate()
            bare.wait(10)
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
