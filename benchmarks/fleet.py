"""Tasks as a lead agent runs them through Baton, beside a plain script doing the same work.

Every figure is set beside a floor measured in the same run (interleaved where a figure is
taken over several rounds). The fake agent (``baton.agents.fake_agent``) edits one file of
a tiny repository (20 files), so each task ends in review; it writes a run log line as it
starts (``BATON_FAKE_RUNLOG``: its first act) and its wrapper an exit record as it ends.

- start → first agent, no broker running: ``baton delegate`` run as a fresh process with
  no broker (it starts one on demand), from its start to the agent's first act; the broker
  is stopped after the task settles (unmeasured). Floor: a raw fork/exec of the same agent,
  to its first act.
- start → first agent, broker running: the same with a broker already running.
- 20 sequential tasks, start → all settled: each delegated (the websocket protocol, one
  connection) once the previous is in review; and the per-task orchestration overhead,
  (all settled - Σ agent lifetimes) / 20, an agent's lifetime being its first act → its
  exit record. Floor: a plain Python script doing the same per task — ``git worktree add``,
  fork/exec of the same agent, waiting for it, ``git add -A`` + ``git diff --cached`` in
  a temporary index — with lifetimes measured the same way.
- 20 concurrent tasks, start → all settled: all delegated at once; the floor's script runs
  the same 20 in threads at once (``git worktree add`` under a lock).
- orchestrator peak RSS over the 20 sequential, and the 20 concurrent, tasks: the broker's
  high-water mark (``VmHWM``) against the plain script's (``ru_maxrss``).

Measured elsewhere: the checkout per task on a 5,000-file repository against a raw ``git
worktree add`` (``checkout_isolated.py``), ``baton --version`` against ``python -c 'import
json'`` (``startup.py``), Baton's per-task phases (``task_overhead.py``).

Run: .venv/bin/python benchmarks/fleet.py [--tasks 20] [--rounds 5] [--quick]
[--server-path DIR]  (another checkout's Baton: ``benchmarks/figures.py``)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from figures import (
    BATON,
    GIT_IDENTITY,
    add_server_path,
    broker_ready,
    fake_env,
    fake_repo,
    figure,
    interleaved,
    load,
    median,
    serve_broker,
    use_server,
)

SCRIPT = {"steps": [{"edit": "f0.txt", "old": "file 0", "new": "file zero"}, {"say": "done"}]}
PROMPT = "bench\n```baton-fake\n" + json.dumps(SCRIPT) + "\n```\n"
SETTLED = {"review", "failed", "answered", "cancelled", "needs_input"}

#: The floor's orchestrator: the same tasks done by the simplest script, in a process of its
#: own (its peak RSS is the floor of the broker's). Prints one JSON line: the wall time from
#: the first task's start to the last one's diff, the agents' lifetimes and ``ru_maxrss``.
RAW = r"""
import json, os, resource, shutil, subprocess, sys, threading, time
from concurrent.futures import ThreadPoolExecutor

repo, base, prompt, runlog, n, mode = sys.argv[1:7]
lock = threading.Lock()

def git(cwd, *args, env=None):
    return subprocess.run(["git", "-c", "core.hooksPath=/dev/null", *args], cwd=cwd,
                          check=True, capture_output=True, env=env).stdout.decode()

def first_act(task_dir):
    for line in reversed(open(runlog).read().splitlines()):
        rec = json.loads(line)
        if rec.get("task_dir") == task_dir:
            return rec["time"]
    raise LookupError(task_dir)

def task(i):
    wt, task_dir = os.path.join(base, f"wt{i}"), os.path.join(base, f"task{i}")
    with lock:
        git(repo, "worktree", "add", "-q", "--detach", wt)
    agent = subprocess.Popen(
        [sys.executable, "-P", "-m", "baton.agents.fake_agent", "--prompt-file", prompt],
        cwd=wt, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, env={**os.environ, "BATON_TASK_DIR": task_dir})
    if agent.wait() != 0:
        raise SystemExit(f"the fake agent failed ({agent.returncode})")
    exited = time.time()
    index = os.path.join(base, f"index{i}")
    shutil.copy(git(wt, "rev-parse", "--git-path", "index").strip(), index)
    env = {**os.environ, "GIT_INDEX_FILE": index}
    git(wt, "add", "-A", env=env)
    if "file zero" not in git(wt, "diff", "--cached", "--no-color", env=env):
        raise SystemExit("the fake agent changed nothing")
    return exited - first_act(task_dir)

start = time.perf_counter()
if mode == "sequential":
    lifetimes = [task(i) for i in range(int(n))]
else:
    with ThreadPoolExecutor(int(n)) as pool:
        lifetimes = list(pool.map(task, range(int(n))))
took = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"took": took, "lifetimes": lifetimes, "rss_mb": rss}))
"""


def git(cwd: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={**os.environ, **GIT_IDENTITY},
    )
    return out.stdout.decode()


class Place:
    """A state folder, runtime folder and user config (the fake agent as default worker,
    20 at once) for brokers, and the run log every fake agent writes."""

    def __init__(self, base: Path, name: str, runlog: Path) -> None:
        self.env = fake_env(base, name, concurrency=20, bytecode=True) | {
            "BATON_IDLE_EXIT": "600",
            "BATON_FAKE_RUNLOG": str(runlog),
        }
        self.run = Path(self.env["XDG_RUNTIME_DIR"])

    def broker(self) -> dict[str, Any] | None:
        """The discovery record of the broker running here (pid, url, token), if any."""
        for path in sorted((self.run / "baton").glob("broker-*.json")):
            rec = json.loads(path.read_text())
            if pid_alive(int(rec["pid"])):
                return dict(rec) | {"url": f"ws://127.0.0.1:{rec['port']}"}
        return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in status(pid, "State")


def status(pid: int, key: str) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return line.split(":", 1)[1].strip()
    return ""


def stop_pid(pid: int) -> None:
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while pid_alive(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def first_act(runlog: Path, task_dir_name: str, wait: float = 60) -> dict[str, Any]:
    """The run log line of the agent whose task folder is named ``task_dir_name``."""
    deadline = time.monotonic() + wait
    while True:
        if runlog.exists():
            for line in reversed(runlog.read_text().splitlines()):
                rec = json.loads(line)
                if Path(str(rec.get("task_dir"))).name == task_dir_name:
                    return dict(rec)
        if time.monotonic() > deadline:
            raise LookupError(f"no fake agent run for {task_dir_name}")
        time.sleep(0.005)


def lifetime(runlog: Path, task_id: str) -> float:
    """A task's agent, first act → its exit record (the wrapper's ``ended_at``)."""
    rec = first_act(runlog, task_id)
    exit_path = Path(str(rec["out"])).with_suffix(".exit")
    return float(json.loads(exit_path.read_text())["ended_at"]) - float(rec["time"])


class Client:
    """One websocket connection to a broker, watching every task."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws, self.n = ws, 0
        self.states: dict[str, str] = {}
        self.answers: dict[int, Any] = {}

    @classmethod
    async def open(cls, info: dict[str, Any]) -> Client:
        headers = {"Authorization": f"Bearer {info['token']}"}
        ws = await connect(info["url"], additional_headers=headers, max_size=None)
        client = cls(ws)
        await client.answer(await client.send("watch", None))
        return client

    async def send(self, method: str, params: dict[str, Any] | None) -> int:
        self.n += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self.n, "method": method}
        if params is not None:
            msg["params"] = params
        await self.ws.send(json.dumps(msg))
        return self.n

    async def read(self) -> None:
        msg = json.loads(await asyncio.wait_for(self.ws.recv(), 120))
        if "id" in msg:
            if "error" in msg:
                raise RuntimeError(f"the broker answered {msg['error']}")
            self.answers[msg["id"]] = msg["result"]
        events = [msg["params"]["event"]] if msg.get("method") == "event" else []
        events += msg.get("params", {}).get("events", []) if msg.get("method") == "events" else []
        for e in events:
            if e["type"] == "state":
                self.states[e["taskId"]] = e["data"]["to"]

    async def answer(self, n: int) -> Any:
        while n not in self.answers:
            await self.read()
        return self.answers.pop(n)

    async def settled(self, ids: list[str]) -> None:
        while not all(self.states.get(i) in SETTLED for i in ids):
            await self.read()
        wrong = {i: self.states[i] for i in ids if self.states[i] != "review"}
        if wrong:
            raise RuntimeError(f"tasks did not end in review: {wrong}")

    async def delegate(self, repo: Path, n: int) -> list[str]:
        """Delegate ``n`` tasks at once; their ids."""
        asks = [
            await self.send("delegate", {"instruction": PROMPT, "cwd": str(repo)}) for _ in range(n)
        ]
        return [(await self.answer(a))["task"]["id"] for a in asks]


def cli(place: Place, *args: str, stderr: int = subprocess.PIPE) -> subprocess.Popen[str]:
    """A ``baton`` command, run as the installed script runs it."""
    return subprocess.Popen(
        [sys.executable, "-c", BATON, *args],
        env=place.env,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )


def delegate_to_first_act(place: Place, repo: Path, runlog: Path) -> tuple[float, str]:
    """``baton delegate`` from a fresh process → the agent's first act; and the task id."""
    start = time.time()
    proc = cli(place, "delegate", PROMPT, "--cwd", str(repo))
    out, err = proc.communicate(timeout=120)
    if proc.returncode != 0:
        raise SystemExit(f"baton delegate failed ({proc.returncode}): {err.strip()}")
    task_id = out.strip().split()[-1]
    return float(first_act(runlog, task_id)["time"]) - start, task_id


async def wait_settled(info: dict[str, Any], task_id: str) -> None:
    client = await Client.open(info)
    try:
        while client.states.get(task_id) not in SETTLED:
            n = await client.send("get", {"id": task_id})
            client.states[task_id] = (await client.answer(n))["task"]["state"]
            if client.states[task_id] not in SETTLED:
                await asyncio.sleep(0.1)
    finally:
        await client.ws.close()


def raw_first_act(base: Path, repo: Path, runlog: Path, n: list[int]) -> float:
    """Floor: a raw fork/exec of the same agent (in a raw worktree, made untimed)."""
    n[0] += 1
    wt, task_dir = base / f"first{n[0]}", base / f"first-task{n[0]}"
    git(repo, "worktree", "add", "-q", "--detach", str(wt))
    prompt = base / "prompt.md"
    start = time.time()
    agent = subprocess.Popen(
        [sys.executable, "-P", "-m", "baton.agents.fake_agent", "--prompt-file", str(prompt)],
        cwd=wt,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "BATON_TASK_DIR": str(task_dir), "BATON_FAKE_RUNLOG": str(runlog)},
    )
    took = float(first_act(runlog, task_dir.name)["time"]) - start
    agent.wait(60)
    git(repo, "worktree", "remove", "--force", str(wt))
    return took


def raw_fleet(base: Path, repo: Path, runlog: Path, n: int, mode: str) -> dict[str, Any]:
    folder = base / f"raw-{mode}-{time.monotonic_ns()}"
    folder.mkdir()
    env = {**os.environ, **GIT_IDENTITY, "BATON_FAKE_RUNLOG": str(runlog)}
    argv = [sys.executable, "-c", RAW, str(repo), str(folder), str(base / "prompt.md")]
    out = subprocess.run(
        [*argv, str(runlog), str(n), mode], env=env, capture_output=True, text=True, timeout=600
    )
    if out.returncode != 0:
        raise SystemExit(f"the floor's script failed: {out.stderr.strip()[-500:]}")
    for wt in folder.glob("wt*"):
        git(repo, "worktree", "remove", "--force", str(wt))
    return dict(json.loads(out.stdout))


async def baton_fleet(
    info: dict[str, Any], repo: Path, runlog: Path, n: int, mode: str
) -> dict[str, Any]:
    client = await Client.open(info)
    try:
        start = time.perf_counter()
        ids: list[str] = []
        if mode == "sequential":
            for _ in range(n):
                ids += await client.delegate(repo, 1)
                await client.settled(ids[-1:])
        else:
            ids = await client.delegate(repo, n)
            await client.settled(ids)
        took = time.perf_counter() - start
    finally:
        await client.ws.close()
    rss = int(status(int(info["pid"]), "VmHWM").split()[0]) / 1024
    return {"took": took, "lifetimes": [lifetime(runlog, i) for i in ids], "rss_mb": rss}


def main(tasks: int, rounds: int) -> None:
    base = Path(tempfile.mkdtemp(prefix="baton-bench-fleet-"))
    runlog = base / "runs.jsonl"
    (base / "prompt.md").write_text(PROMPT)
    # A tiny repository: 20 small text files, one commit.
    repo = fake_repo(base / "repo", {f"f{i}.txt": f"file {i}\n" * 20 for i in range(20)})
    cold, warm = Place(base, "cold", runlog), Place(base, "warm", runlog)
    counter = [0]
    try:
        # Warm: bytecode written, the databases made, git's and python's start-up cached.
        _, tid = delegate_to_first_act(cold, repo, runlog)
        info = cold.broker()
        assert info is not None, "baton delegate started no broker"
        asyncio.run(wait_settled(info, tid))
        stop_pid(int(info["pid"]))
        raw_first_act(base, repo, runlog, counter)

        def cold_start() -> float:
            took, tid = delegate_to_first_act(cold, repo, runlog)
            info = cold.broker()
            assert info is not None, "baton delegate started no broker"
            asyncio.run(wait_settled(info, tid))
            stop_pid(int(info["pid"]))
            return took

        def warm_start() -> float:
            took, tid = delegate_to_first_act(warm, repo, runlog)
            info = warm.broker()
            assert info is not None
            asyncio.run(wait_settled(info, tid))
            return took

        broker = serve_broker(repo, warm.env, quiet=True)
        broker_ready(broker)  # listening
        try:
            info = warm.broker()
            assert info is not None and int(info["pid"]) == broker.pid
            got = interleaved(
                {
                    "cold": cold_start,
                    "warm": warm_start,
                    "floor": lambda: raw_first_act(base, repo, runlog, counter),
                },
                rounds,
            )
            fleet = {
                "baton sequential": asyncio.run(
                    baton_fleet(info, repo, runlog, tasks, "sequential")
                ),
                "raw sequential": raw_fleet(base, repo, runlog, tasks, "sequential"),
                "raw concurrent": raw_fleet(base, repo, runlog, tasks, "concurrent"),
                "baton concurrent": asyncio.run(
                    baton_fleet(info, repo, runlog, tasks, "concurrent")
                ),
            }
        finally:
            broker.terminate()
            broker.wait(30)
    finally:
        for place in (cold, warm):
            left = place.broker()
            if left is not None:
                stop_pid(int(left["pid"]))
        shutil.rmtree(base, ignore_errors=True)

    print(f"{tasks} tasks, {rounds} rounds, tiny repository; load {' '.join(map(str, load()))}")
    fork = median(got["floor"]) * 1000
    raw = "raw fork/exec of the same fake agent, to its first act"
    for key, label in (("cold", "no broker running"), ("warm", "broker running")):
        figure(f"start → first agent, {label}", median(got[key]) * 1000, fork, raw, runs=rounds)
    script = "a plain script: git worktree add, fork/exec the agent, git add -A + diff"
    for mode in ("sequential", "concurrent"):
        b, r = fleet[f"baton {mode}"], fleet[f"raw {mode}"]
        of = "fleet (one run of each)"
        if mode == "sequential":
            figure(
                f"per-task orchestration overhead, {tasks} sequential tasks",
                (b["took"] - sum(b["lifetimes"])) / tasks * 1000,
                (r["took"] - sum(r["lifetimes"])) / tasks * 1000,
                script,
                runs=1,
                stat="(settled - Σ lifetimes) / n",
                of=of,
            )
        figure(
            f"{tasks} {mode} tasks, start → all settled",
            b["took"],
            r["took"],
            script,
            unit="s",
            runs=1,
            stat="wall",
            of=of,
        )
        figure(
            f"orchestrator peak RSS, {tasks} {mode} tasks",
            b["rss_mb"],
            r["rss_mb"],
            "the plain script's ru_maxrss; Baton's is the broker's VmHWM",
            unit="MB",
            runs=1,
            stat="peak",
            of=of,
        )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=20, help="tasks in each fleet")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds of start-up")
    ap.add_argument("--quick", action="store_true", help="2 tasks, 1 round: a smoke run")
    add_server_path(ap)
    a = ap.parse_args()
    use_server(a.server_path)
    main(2, 1) if a.quick else main(a.tasks, a.rounds)
