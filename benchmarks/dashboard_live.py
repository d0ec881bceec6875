"""The dashboard's cost to the agents: agent line → subscriber latency with and without a
dashboard page open, 20 streaming fake tasks through a headless broker.

A real `baton serve` process; agent subscribers are lean websocket clients (those of
benchmarks/ws_fanout.py) watching every task; the page is a websockets client of the
dashboard's live socket (`/dashboard/live`, its cookie from a one-time link as a browser
gets it), in a process of its own. Rounds alternate — no page, page open, no page, … — each
delegating the same 20 streaming tasks, so a busy machine weighs on both alike. Prints:
- the subscribers' p99 (event stamped in the broker, as its agent's line is read → received)
  with the page open, beside the same without it (the floor), and the difference
  (target: at most 1 ms);
- what the page received: events (target: every stored one) and their latency (pushed in
  batches, at most one frame per 100 ms);
- how long the dashboard's pushes held the broker's event loop per stretch (``health``'s
  ``dashboard.busy``): the most one flush can delay an agent's next batch, the figure that
  stays readable when a loaded machine moves the p99s by more than the difference.

Run: .venv/bin/python benchmarks/dashboard_live.py [--subscribers 5] [--tasks 20]
[--events 300] [--rounds 2] [--quick] [--server-path DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import multiprocessing as mp
import statistics
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from websockets.asyncio.client import connect
from websockets.typing import Origin

from figures import (
    add_server_path,
    broker_ready,
    fake_workspace,
    figure,
    measure,
    serve_broker,
    use_server,
)
from ws_clients import rpc, subscribe
from ws_fanout import pct, script


def cookie_for(url: str) -> tuple[int, str]:
    """Trade a one-time link for the session cookie, as the browser does."""
    parts = urlsplit(url)
    assert parts.port is not None
    conn = http.client.HTTPConnection("127.0.0.1", parts.port, timeout=30)
    conn.request("GET", f"{parts.path}?{parts.query}")
    res = conn.getresponse()
    res.read()
    conn.close()
    assert res.status == 303, res.status
    return parts.port, str(res.getheader("Set-Cookie")).split(";", 1)[0]


async def _page(port: int, cookie: str, ready: Any, done: Any, out: Any) -> None:
    latencies: list[float] = []
    seqs: dict[str, set[int]] = {}
    async with connect(
        f"ws://127.0.0.1:{port}/dashboard/live",
        additional_headers={"Cookie": cookie},
        origin=Origin(f"http://127.0.0.1:{port}"),
        max_size=None,
    ) as ws:
        assert json.loads(await ws.recv())["type"] == "hello"
        ready.release()

        async def close_when_done() -> None:
            await asyncio.to_thread(done.wait)
            await ws.close()

        closer = asyncio.create_task(close_when_done())
        async for frame in ws:
            now = time.time()
            msg = json.loads(frame)
            if msg["type"] == "events":
                for e in msg["events"]:
                    latencies.append((now - e["ts"]) * 1000)
                    seqs.setdefault(e["taskId"], set()).add(e["seq"])
        await closer
    out.put({"latencies": latencies, "seqs": {k: sorted(v) for k, v in seqs.items()}})


def page_proc(port: int, cookie: str, ready: Any, done: Any, out: Any) -> None:
    asyncio.run(_page(port, cookie, ready, done, out))


def run_round(
    args: argparse.Namespace, url: str, token: str, repo: Path
) -> tuple[float, float, list[str]]:
    """Delegate the tasks and wait until none is busy; the round's wall-clock span."""
    start = time.time()
    calls = [
        ("delegate", {"instruction": script(args.events, args.rate, args.settle), "cwd": str(repo)})
        for _ in range(args.tasks)
    ]
    ids = [r["task"]["id"] for r in asyncio.run(rpc(url, token, calls))]
    busy = {"state": ["queued", "preparing", "running"], "limit": 1}
    while asyncio.run(rpc(url, token, [("tasks", busy)]))[0]["tasks"]:
        time.sleep(0.5)
    time.sleep(1.0)  # the last events arrive
    return start, time.time(), ids


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subscribers", type=int, default=5)
    ap.add_argument("--procs", type=int, default=1)
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--events", type=int, default=300, help="streamed events per task")
    ap.add_argument("--rate", type=float, default=100.0, help="events per second per task")
    ap.add_argument("--rounds", type=int, default=2, help="rounds with the page, and without")
    ap.add_argument(
        "--settle", type=float, default=3.0, help="seconds each agent waits before streaming"
    )
    ap.add_argument("--quick", action="store_true", help="2 tasks, one round each: a smoke run")
    add_server_path(ap)
    args = ap.parse_args()
    use_server(args.server_path)
    args.client = "lean"
    if args.quick:
        args.subscribers, args.tasks, args.events, args.rounds, args.settle = 2, 2, 50, 1, 1.0

    repo, env = fake_workspace("baton-dashbench-")
    server = serve_broker(repo, env)
    try:
        url, token = broker_ready(server)
        # The dashboard's listener is open in both kinds of round: only the page differs.
        invite = asyncio.run(rpc(url, token, [("dashboard", {})]))[0]
        port, cookie = cookie_for(invite["url"])
        procs, done, out = subscribe(args, url, token)
        ctx = mp.get_context("spawn")
        spans: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
        page_results: list[dict[str, Any]] = []
        page_ids: list[str] = []
        for n in range(2 * args.rounds):
            with_page = (n % 2 == 1) if (n // 2) % 2 == 0 else (n % 2 == 0)  # A B B A A B …
            page = None
            if with_page:
                ready, page_done, page_out = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
                page = ctx.Process(
                    target=page_proc, args=(port, cookie, ready, page_done, page_out)
                )
                page.start()
                assert ready.acquire(timeout=60), "the page did not connect"
            start, end, ids = run_round(args, url, token, repo)
            spans[with_page].append((start, end))
            if page is not None:
                page_done.set()
                page_results.append(page_out.get(timeout=60))
                page.join(10)
                page_ids.extend(ids)
        done.set()
        results = [r for _ in procs for r in out.get(timeout=60)]
        for p in procs:
            p.join(10)

        def within(which: bool) -> list[float]:
            return [
                ms
                for r in results
                for ts, ms in r["latencies"]
                if any(a <= ts <= b for a, b in spans[which])
            ]

        without, with_ = within(False), within(True)
        stored = {}
        for tid in page_ids:
            ask = {"id": tid, "detail": ["events"], "events": 0}
            stored[tid] = asyncio.run(rpc(url, token, [("inspect", ask)]))[0]["detail"][
                "eventCount"
            ]
        seen: dict[str, set[int]] = {}
        for r in page_results:
            for tid, seqs in r["seqs"].items():
                seen.setdefault(tid, set()).update(seqs)
        missed = sum(
            stored[t] - len(seen.get(t, set()) & set(range(1, stored[t] + 1))) for t in stored
        )
        page_lat = [x for r in page_results for x in r["latencies"]]
        health = asyncio.run(rpc(url, token, [("health", {})]))[0]
        busy = health.get("dashboard", {}).get("busy", {})
        p_with, p_without = pct(with_, 99), pct(without, 99)
        print(
            f"subscribers {args.subscribers} x tasks {args.tasks} ({args.events} streamed events "
            f"each at {args.rate:g}/s); {args.rounds} rounds with a dashboard page, "
            f"{args.rounds} without, alternating"
        )
        print(
            f"agent line -> subscriber ms, no page: median {statistics.median(without):.2f}  "
            f"p99 {p_without:.2f}  ({len(without)} deliveries)"
        )
        print(
            f"agent line -> subscriber ms, page open: median {statistics.median(with_):.2f}  "
            f"p99 {p_with:.2f}  ({len(with_)} deliveries)"
        )
        print(f"difference in p99: {p_with - p_without:+.2f} ms  (target <= 1 ms)")
        print(
            f"the page: {len(page_lat)} events received, {missed} of {sum(stored.values())} "
            f"stored missed; latency median {statistics.median(page_lat):.1f}  "
            f"p99 {pct(page_lat, 99):.1f} ms (batched: one frame per 100 ms at most)"
        )
        print(
            f"the dashboard's pushes held the broker's event loop, ms per stretch: median "
            f"{busy.get('median')}  p99 {busy.get('p99')}  max {busy.get('max')} (the most one "
            f"flush can delay the agents' next batch; it runs at most every 100 ms)"
        )
        figure(
            f"agent line -> subscriber p99, a dashboard page open on {args.tasks} streaming tasks",
            p_with,
            p_without,
            "the same broker and subscribers with no page open, rounds interleaved",
            runs=len(with_),
            stat="p99",
            of="deliveries (the floor's over as many rounds without the page)",
        )
        measure(
            "dashboard's addition to the subscribers' p99 (target <= 1)", p_with - p_without, "ms"
        )
        measure("events the dashboard page missed", missed, "events")
        if busy:
            measure("dashboard's pushes on the broker's loop per flush, p99", busy["p99"], "ms")
        measure("dashboard page delivery p99", pct(page_lat, 99), "ms")
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
