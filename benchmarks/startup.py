"""How fast the ``baton`` command starts, beside the floor of each figure, measured in the
same interleaved runs:

- ``baton --version`` against ``python -c 'import json'`` (the same interpreter; goal ≤ 3x);
- ``baton --help`` against the same floor (what building the whole parser costs);
- ``baton delegate`` → id printed and exited, a broker running (goal ≤ 80 ms), against a bare
  websocket round trip: a fresh Python process that imports the websockets library, connects
  to a bare websockets server, sends the same request and reads an answer of the same shape
  (goal: ≤ 2x);
- ``baton serve`` started → listening (its ready line: discovery file written, socket open; what
  a command waits for when it starts a broker on demand; goal ≤ 200 ms), against a bare
  websockets server process started → listening;
- ``baton delegate`` → id printed and exited, no broker running (the command starts one on
  demand and waits for its answer: listening is not the end of a broker's start, its runtime
  still loads), against a bare websockets server process started → listening, then a bare
  round trip to it from a fresh process.

Each command runs as the ``baton`` script does (``from baton.cli import main``), with its
bytecode cached as in an installed package (``PYTHONDONTWRITEBYTECODE`` is dropped for the
children). The broker delegates to the fake agent, in a throwaway state folder.

Run: .venv/bin/python benchmarks/startup.py [--pairs 7] [--quick] [--server-path DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from figures import (
    BATON,
    add_server_path,
    broker_ready,
    fake_env,
    fake_repo,
    figure,
    interleaved,
    median,
    serve_broker,
    use_server,
)

FLOOR = "import json"

#: A bare websockets server: answers every frame with a result shaped like delegate's.
BARE_SERVER = r"""
import asyncio, json, sys
from websockets.asyncio.server import serve

TASK = {"id": "0abc123defg", "state": "queued", "next": ["watch", "inspect", "cancel"]}

async def answer(ws):
    async for frame in ws:
        msg = json.loads(frame)
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"task": TASK}}))

async def main():
    async with serve(answer, "127.0.0.1", 0, compression=None) as server:
        print("ready", server.sockets[0].getsockname()[1], flush=True)
        await asyncio.Future()

asyncio.run(main())
"""

#: A bare websocket round trip from a fresh process: connect, one request, one answer.
BARE_CLIENT = r"""
import asyncio, json, sys
from websockets.asyncio.client import connect

async def main(url, params):
    async with connect(url, compression=None, ping_interval=None) as ws:
        request = {"jsonrpc": "2.0", "id": 1, "method": "delegate", "params": params}
        await ws.send(json.dumps(request))
        print(json.loads(await ws.recv())["result"]["task"]["id"])

asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))
"""

INSTRUCTION = (
    "benchmark\n```baton-fake\n"
    + json.dumps({"steps": [{"say": "done"}], "summary": "ok"})
    + "\n```\n"
)


def place(base: Path, name: str) -> dict[str, str]:
    """A broker's own state folder, runtime folder and user config (the fake agent as
    default worker), its modules loaded from cached bytecode; it exits after 10 idle
    minutes."""
    return fake_env(base, name, bytecode=True) | {"BATON_IDLE_EXIT": "600"}


def run(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> str:
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[2:]} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def start(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[subprocess.Popen[str], str]:
    """Start a server; return it and its first line (it prints one once listening)."""
    proc = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(10)
        raise SystemExit(f"{argv[2:]} exited at start ({proc.returncode})")
    return proc, line


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def stop_started(env: dict[str, str]) -> None:
    """Stop the brokers a command started on demand in ``env``'s runtime folder."""
    for path in (Path(env["XDG_RUNTIME_DIR"]) / "baton").glob("broker-*.json"):
        pid = int(json.loads(path.read_text())["pid"])
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.02)


def main(pairs: int, pause: float = 0.3) -> list[dict[str, Any]]:
    base = Path(tempfile.mkdtemp(prefix="baton-bench-startup-"))
    repo = fake_repo(base / "repo", {"app.py": "def a():\n    return 1\n"})
    env = place(base, "delegate")
    py = sys.executable
    rows = []

    # Warm every path once (bytecode written, file cache filled), unmeasured.
    run([py, "-c", FLOOR], env)
    run([py, "-c", BATON, "--version"], env)
    run([py, "-c", BATON, "--help"], env)

    def version() -> float:
        t = time.perf_counter()
        out = run([py, "-c", BATON, "--version"], env)
        took = time.perf_counter() - t
        assert out.startswith("baton "), out
        return took

    def helped() -> float:
        t = time.perf_counter()
        run([py, "-c", BATON, "--help"], env)
        return time.perf_counter() - t

    def floor() -> float:
        t = time.perf_counter()
        run([py, "-c", FLOOR], env)
        return time.perf_counter() - t

    got = interleaved({"version": version, "help": helped, "floor": floor}, pairs)
    for name, what in (("version", "baton --version"), ("help", "baton --help")):
        rows.append(
            figure(
                what,
                median(got[name]) * 1000,
                median(got["floor"]) * 1000,
                "python -c 'import json'",
                runs=pairs,
            )
        )

    broker = serve_broker(repo, env, quiet=True)
    broker_ready(broker)
    bare, line = start([py, "-c", BARE_SERVER], env, repo)
    try:
        url = f"ws://127.0.0.1:{line.split()[1]}"
        params = json.dumps({"instruction": INSTRUCTION, "cwd": str(repo), "action": "delegate"})
        delegate_argv = [py, "-c", BATON, "delegate", INSTRUCTION, "--cwd", str(repo)]
        run(delegate_argv, env)  # warm
        run([py, "-c", BARE_CLIENT, url, params], env)

        def delegated() -> float:
            t = time.perf_counter()
            out = run(delegate_argv, env)
            took = time.perf_counter() - t
            assert len(out.strip()) >= 4, out  # the id
            time.sleep(pause)  # unmeasured: the task runs in the broker meanwhile
            return took

        def round_trip() -> float:
            t = time.perf_counter()
            out = run([py, "-c", BARE_CLIENT, url, params], env)
            took = time.perf_counter() - t
            assert out.strip() == "0abc123defg", out
            time.sleep(pause)
            return took

        got = interleaved({"baton": delegated, "floor": round_trip}, pairs)
        rows.append(
            figure(
                "delegate → id (broker running)",
                median(got["baton"]) * 1000,
                median(got["floor"]) * 1000,
                "bare websocket round trip from a fresh process",
                runs=pairs,
            )
        )
    finally:
        stop(broker)
        stop(bare)

    serve_env = place(base, "serve")
    serve_argv = [py, "-c", BATON, "serve", "--root", str(repo), "--json"]
    stop(start(serve_argv, serve_env, repo)[0])  # warm: the first start creates the database

    def started(argv: list[str], env: dict[str, str]) -> float:
        t = time.perf_counter()
        proc, _ = start(argv, env, repo)
        took = time.perf_counter() - t
        stop(proc)
        return took

    got = interleaved(
        {
            "baton": lambda: started(serve_argv, serve_env),
            "floor": lambda: started([py, "-c", BARE_SERVER], env),
        },
        pairs,
    )
    rows.append(
        figure(
            "broker started → listening",
            median(got["baton"]) * 1000,
            median(got["floor"]) * 1000,
            "bare websockets server process started → listening",
            runs=pairs,
        )
    )

    demand_env = place(base, "on-demand")

    def on_demand() -> float:
        t = time.perf_counter()
        out = run(delegate_argv, demand_env)
        took = time.perf_counter() - t
        assert len(out.strip()) >= 4, out  # the id
        time.sleep(pause)  # unmeasured: the task settles, so the next broker adopts nothing
        stop_started(demand_env)
        return took

    def bare_on_demand() -> float:
        t = time.perf_counter()
        proc, line = start([py, "-c", BARE_SERVER], env, repo)
        url = f"ws://127.0.0.1:{line.split()[1]}"
        out = run([py, "-c", BARE_CLIENT, url, params], env)
        took = time.perf_counter() - t
        assert out.strip() == "0abc123defg", out
        stop(proc)
        return took

    on_demand()  # warm: the first start creates the database
    got = interleaved({"baton": on_demand, "floor": bare_on_demand}, pairs)
    rows.append(
        figure(
            "delegate → id (no broker: started on demand)",
            median(got["baton"]) * 1000,
            median(got["floor"]) * 1000,
            "bare websockets server process started, then a bare round trip from a fresh process",
            runs=pairs,
        )
    )
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=7, help="interleaved runs of each case")
    ap.add_argument("--quick", action="store_true", help="3 runs each: a smoke run")
    add_server_path(ap)
    a = ap.parse_args()
    use_server(a.server_path)
    main(3, pause=0.05) if a.quick else main(a.pairs)
