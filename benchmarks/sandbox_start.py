"""What the agent sandbox costs per attempt: start-up with bubblewrap against none.

Each round starts a trivial agent (``/bin/true``, and the fake agent answering one line)
detached through :func:`~baton.process.spawn.spawn` in a git worktree, as the broker does,
and waits for its exit record: once unsandboxed, once in the sandbox (policy building, the
namespaces, the mounts). Rounds alternate so machine load hits both alike.

Prints the median and p90 in ms per case and the sandbox's extra cost (median difference),
and each beside its floor measured in the same rounds: a raw fork/exec of the same agent
(``subprocess`` with the same argv, environment and folder, waited for).
Run: .venv/bin/python benchmarks/sandbox_start.py [--rounds 30] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from baton.agents.base import Launch, Turn
from baton.agents.fake import FakeAdapter
from baton.config.profiles import Profile
from baton.process.sandbox import UNCONFINED, confine, status
from baton.process.spawn import agent_env, spawn, wait_exit
from figures import figure


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@b", *args],
        cwd=cwd, check=True, capture_output=True,
    )  # fmt: skip


async def one(launch: Launch, task_dir: Path, sandboxed: bool) -> float:
    t0 = time.perf_counter()
    how = confine(launch, task_dir, agent_env(launch)) if sandboxed else UNCONFINED
    record = spawn(launch, task_dir, 1, how)
    ended = await wait_exit(record, poll=0.001)
    elapsed = time.perf_counter() - t0
    if ended is None or ended.code != 0:
        raise SystemExit(f"the agent failed: {record.err_path.read_text()}")
    return elapsed * 1000


def raw(launch: Launch) -> float:
    """Milliseconds for a raw fork/exec of the agent, waited for (no wrapper, no records)."""
    env = agent_env(launch)
    t0 = time.perf_counter()
    subprocess.run(
        launch.argv,
        cwd=launch.cwd,
        env=env,
        input=launch.stdin,
        text=True,
        stdin=None if launch.stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    return (time.perf_counter() - t0) * 1000


def show(name: str, samples: list[float]) -> float:
    samples.sort()
    median = statistics.median(samples)
    p90 = samples[int(len(samples) * 0.9)]
    print(f"{name:<28} median {median:7.1f} ms   p90 {p90:7.1f} ms")
    return median


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="3 rounds: a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.rounds = 3
    found = status()
    if not found.works:
        raise SystemExit(f"no sandbox here: {found.why}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home = root / "state"
        os.environ["BATON_HOME"] = str(home)
        repo = root / "repo"
        repo.mkdir()
        (repo / "a.txt").write_text("a\n")
        git(repo, "init", "-q")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", "i")
        checkout = home / "worktrees" / "t"
        git(repo, "worktree", "add", "-q", "-b", "baton/t", str(checkout))
        turn = Turn(task_id="t", prompt="hi", cwd=str(checkout), task_dir=str(home / "tasks/t"))
        cases = {
            "true": Launch(argv=["true"], cwd=str(checkout)),
            "fake agent": FakeAdapter().launch(turn, Profile("fake", "fake")),
        }
        print(f"sandbox: bubblewrap {found.version}; {args.rounds} rounds each")
        n = 0
        for name, launch in cases.items():
            times: dict[bool, list[float]] = {False: [], True: []}
            floor: list[float] = []
            for i in range(args.rounds):
                if i % 2:
                    floor.append(raw(launch))
                for sandboxed in (False, True) if i % 2 == 0 else (True, False):
                    n += 1
                    task_dir = home / "tasks" / f"t{n}"
                    times[sandboxed].append(await one(launch, task_dir, sandboxed))
                if i % 2 == 0:
                    floor.append(raw(launch))
            plain = show(f"{name}, unsandboxed", times[False])
            boxed = show(f"{name}, sandboxed", times[True])
            bare = show(f"{name}, raw fork/exec", floor)
            print(f"{'':<28} the sandbox adds {boxed - plain:6.1f} ms per attempt")
            for how, value in (("unsandboxed", plain), ("sandboxed", boxed)):
                figure(
                    f"{name} start → exit record, {how}",
                    value,
                    bare,
                    "raw fork/exec of the same agent, waited for",
                    runs=args.rounds,
                )


if __name__ == "__main__":
    asyncio.run(main())
