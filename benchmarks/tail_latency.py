"""Write→read latency of agent output: how soon a line an agent writes reaches the parser.

Two measurements, each with 20 processes streaming ~100 lines/s for a few seconds:

* ``tail``: 20 plain writer processes append timestamped lines to their own files; 20
  :class:`~baton.process.tail.Tailer` s in one event loop read them.
* ``agents``: 20 fake agents (``stream`` step) started detached through
  :func:`~baton.process.spawn.spawn`, read through Tailers and the fake adapter's parser
  — the broker's real path.
* ``masked`` (with ``--secret``): the same agents given a secret, so their wrapper reads
  their output through pipes and writes it to the files masked.

* ``pipe`` (the floor): the same plain writers writing to a pipe, each read line by line
  with asyncio's ``readline`` — the least a line can take to reach a reader on this machine.

Prints median, p99 and max latency in ms per measurement, and the p99 of the median round of
``tail`` and ``agents`` beside the ``pipe`` floor (measured in the same rounds; it runs first
every other round). Target: p99 ≤ 5 ms.
Run: .venv/bin/python benchmarks/tail_latency.py [--seconds 5] [--agents 20] [--rate 100]
[--secret] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from baton.agents.base import Turn
from baton.agents.fake import FakeAdapter
from baton.config.profiles import Profile
from baton.core.events import EventType
from baton.core.masking import MASK_ENV
from baton.process.spawn import kill_tree, spawn, wait_exit
from baton.process.tail import Tailer
from figures import figure

WRITER = """
import os, sys, time
path, count, rate, start = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
for i in range(count):
    due = start + i / rate
    now = time.time()
    if due > now:
        time.sleep(due - now)
    os.write(fd, f"{time.time_ns()} {'x' * 80}\\n".encode())
os.close(fd)
"""


def report(name: str, samples: list[float]) -> float:
    samples.sort()
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    print(
        f"{name:>7}: {len(samples)} lines  median {statistics.median(samples):.2f} ms  "
        f"p99 {p99:.2f} ms  max {samples[-1]:.2f} ms"
    )
    return p99


async def bench_tail(folder: Path, n: int, rate: float, seconds: float) -> list[float]:
    count = int(rate * seconds)
    paths = [folder / f"w{i}.out" for i in range(n)]
    for p in paths:
        p.write_bytes(b"")
    latencies: list[float] = []

    async def read(path: Path) -> None:
        tailer = Tailer(path)
        got = 0
        async for line in tailer:
            latencies.append((time.time_ns() - int(line.split(" ", 1)[0])) / 1e6)
            got += 1
            if got == count:
                tailer.close()

    readers = [asyncio.create_task(read(p)) for p in paths]
    await asyncio.sleep(0.05)
    # All writers begin once all have started, each at its own phase (agents are not in step).
    start = time.time() + 1.5
    writers = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", WRITER, str(p), str(count), str(rate), str(start + i / rate / n)
        )
        for i, p in enumerate(paths)
    ]
    await asyncio.gather(*(w.wait() for w in writers))
    await asyncio.wait_for(asyncio.gather(*readers), 10)
    return latencies


async def bench_pipe(n: int, rate: float, seconds: float) -> list[float]:
    """The floor: the same writers, each writing to a pipe read with ``readline``."""
    count = int(rate * seconds)
    start = time.time() + 1.5
    latencies: list[float] = []

    async def one(i: int) -> None:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", WRITER, "/dev/stdout", str(count), str(rate),
            str(start + i / rate / n), stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert proc.stdout is not None
        async for line in proc.stdout:
            latencies.append((time.time_ns() - int(line.split(b" ", 1)[0])) / 1e6)
        await proc.wait()

    await asyncio.gather(*(one(i) for i in range(n)))
    return latencies


#: A secret for the ``masked`` measurement (it begins like no line the agents print).
SECRET = {"API_TOKEN": "sk-bench-7f3a9c1e-d00d-4b1d-9e55-000", MASK_ENV: "API_TOKEN"}


async def bench_agents(
    folder: Path,
    n: int,
    rate: float,
    seconds: float,
    env: dict[str, str] | None = None,
    pause: float = 3.0,
) -> list[float]:
    adapter = FakeAdapter()
    profile = Profile("fake", "fake", env=dict(env or {}))
    count = int(rate * seconds)
    # Streaming starts after a pause, once all agents (two Python startups each) are up.
    steps = [{"sleep": pause}, {"stream": count, "rate": rate, "size": 80}]
    prompt = "```baton-fake\n" + json.dumps({"steps": steps})
    latencies: list[float] = []

    async def run(i: int) -> None:
        work = folder / f"a{i}"
        work.mkdir()
        turn = Turn(task_id=f"t{i}", prompt=prompt + "\n```", cwd=str(work), task_dir=str(work))
        rec = spawn(adapter.launch(turn, profile), work, 1)
        tailer, parser = Tailer(rec.out_path), adapter.parser()

        async def finish() -> None:
            await wait_exit(rec)
            tailer.finish()

        waiter = asyncio.create_task(finish())
        try:
            async for line in tailer:
                now = time.time()
                for event in parser.feed(line):
                    if event.type == EventType.TEXT:
                        latencies.append((now - float(event.data["text"].split()[0])) * 1e3)
        finally:
            waiter.cancel()
            await kill_tree(rec.pid, grace=0.5)

    await asyncio.gather(*(run(i) for i in range(n)))
    return latencies


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--agents", type=int, default=20)
    ap.add_argument("--rate", type=float, default=100.0, help="lines per second per process")
    ap.add_argument("--rounds", type=int, default=3, help="the median round's p99 is the result")
    ap.add_argument("--secret", action="store_true", help="also measure agents given a secret")
    ap.add_argument("--quick", action="store_true", help="2 processes for 1 s, 1 round")
    args = ap.parse_args()
    if args.quick:
        args.seconds, args.agents, args.rounds = 1.0, 2, 1
    print(
        f"{args.agents} processes x {args.rate:g} lines/s for {args.seconds:g} s,"
        f" {args.rounds} rounds"
    )
    p99s: dict[str, list[float]] = {"tail": [], "agents": []}
    if args.secret:
        p99s["masked"] = []
    floor: list[float] = []
    for i in range(args.rounds):
        if i % 2:
            floor.append(report("pipe", await bench_pipe(args.agents, args.rate, args.seconds)))
        with tempfile.TemporaryDirectory(prefix="baton-tail-") as tmp:
            tail = await bench_tail(Path(tmp), args.agents, args.rate, args.seconds)
            agents = await bench_agents(
                Path(tmp), args.agents, args.rate, args.seconds, pause=1.0 if args.quick else 3.0
            )
            masked = None
            if args.secret:
                work = Path(tmp) / "masked"
                work.mkdir()
                masked = await bench_agents(work, args.agents, args.rate, args.seconds, SECRET)
        p99s["tail"].append(report("tail", tail))
        p99s["agents"].append(report("agents", agents))
        if masked is not None:
            p99s["masked"].append(report("masked", masked))
        if i % 2 == 0:
            floor.append(report("pipe", await bench_pipe(args.agents, args.rate, args.seconds)))
    for name, values in p99s.items():
        print(f"{name:>7}: p99 of the median round {statistics.median(values):.2f} ms")
    for name, values in p99s.items():
        figure(
            f"output line → reader ({name}), {args.agents} processes",
            statistics.median(values),
            statistics.median(floor),
            "the same writers to a pipe, read with readline",
            runs=args.rounds,
            stat="p99",
            of="rounds (the median round's p99)",
        )
    worst = max(statistics.median(v) for v in p99s.values())
    print(f"target p99 <= 5 ms: {'met' if worst <= 5 else 'NOT met'} (load: {os.getloadavg()})")


if __name__ == "__main__":
    asyncio.run(main())
