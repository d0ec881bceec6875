"""What the broker adds to each task on a tiny repository, beside the simplest script's cost.

Tasks run one after the other in an in-process broker (the fake agent edits one file, so
each task ends in review). For each, from the broker's own records:

- created → agent started: the task's ``created_at`` to the fake agent's first act (the
  time in its run log line, ``BATON_FAKE_RUNLOG``): snapshot, checkout, brief, the wrapper
  and the sandbox, and the agent's own start-up;
- created → spawn: ``created_at`` to the moment the broker starts the agent's wrapper (the
  attempt's ``started_at``): Baton's own work before any agent process exists;
- agent exited → review: the wrapper's exit record (``ended_at``) to a subscriber seeing the
  task move to review: noticing the exit, staging the checkout, the diff, its storage;
- CPU per task (mean): the broker process's and its children's (git, the wrapper, the
  sandbox, the agent), which a loaded machine moves much less than the times above;
- processes per task, created → spawn (mean, a ``MEASURE``): the git processes the broker
  started on the task's way to its agent, and all the processes it started (background
  work of the pool's refill thread left out): counts no load moves.

Their floors are measured in the same rounds (the order alternates every round): the same
fake agent started by a raw fork/exec (``subprocess.Popen`` to its run log line) in a raw
``git worktree add`` of the same tree (timed on its own: the floor of created → spawn), and,
once it exited, the raw ``git add -A`` + ``git diff --cached`` that show what it changed.
Goals (issue 18): created → spawn ≤ 25 ms, agent exited → review ≤ 25 ms. Baton's own share
of created → agent started (its median less the raw fork/exec's: what Baton adds to the
agent's own start, the wrapper and the sandbox included) is printed too, as a ``MEASURE``.

With ``--files N`` the repository has N files (the tiny 20 and N - 20 of about 1 KiB in
folders) and two brokers take turns with the floors: one with a warm pool (refilled after
each of its tasks, untimed, as between a user's tasks) and one without (a fresh checkout per
task). Goal (issue 18, 5,000 files): created → agent started ≤ 100 ms with a warm pool, and
never above the broker without one.

With ``--sandbox off`` the agents run unsandboxed (the user setting ``sandbox = "off"``):
what Baton adds beside an orchestrator that has no sandbox; bubblewrap's own start is the
difference (``benchmarks/sandbox_start.py`` times it alone).

Run: .venv/bin/python benchmarks/task_overhead.py [--tasks 20] [--files N] [--quick]
[--sandbox off] [--server-path DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from figures import add_server_path, figure, load, measure, median, use_server

SCRIPT = {"steps": [{"edit": "f0.txt", "old": "file 0", "new": "file zero"}, {"say": "done"}]}
PROMPT = "bench\n```baton-fake\n" + json.dumps(SCRIPT) + "\n```\n"
ENV = {
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@l",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@l",
}


def _goal(applies: bool, goal: float) -> dict[str, Any]:
    """The figure's goal, where it has one."""
    return {"goal": goal} if applies else {}


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    out = subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={**os.environ, **ENV, **(env or {})},
    )
    return out.stdout.decode()


def make_repo(base: Path, files: int = 20) -> Path:
    """A repository of 20 small text files and ``files - 20`` of about 1 KiB in folders."""
    repo = base / "repo"
    repo.mkdir()
    for i in range(20):
        (repo / f"f{i}.txt").write_text(f"file {i}\n" * 20)
    for i in range(files - 20):
        folder = repo / f"pkg{i % 50}" / f"sub{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{i}.py").write_text(
            "".join(f"def f{j}(x):\n    return x + {j}\n" for j in range(25))
        )
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "init")
    return repo


#: When the broker started each process, whether it is git, and from which thread.
STARTS: list[tuple[float, bool, str]] = []


def count_processes() -> None:
    """Record every process this process starts from now on (see :data:`STARTS`)."""
    real = subprocess.Popen

    class Counted(real):  # type: ignore[valid-type, misc]
        def __init__(self, args: Any, *rest: Any, **kw: Any) -> None:
            argv = [os.path.basename(str(a)) for a in (args if isinstance(args, list) else [])]
            thread = threading.current_thread().name
            STARTS.append((time.time(), "git" in argv[:8], thread))
            super().__init__(args, *rest, **kw)

    subprocess.Popen = Counted  # type: ignore[misc]


def started_between(start: float, end: float) -> tuple[int, int]:
    """How many processes (git ones, all) the broker started from ``start`` to ``end``,
    but for the pool's refill thread (work nobody waits for)."""
    found = [git for when, git, thread in STARTS if start <= when <= end and "refill" not in thread]
    return sum(found), len(found)


def cpu() -> float:
    """Seconds of CPU this process and its reaped children (git, wrappers, agents) used."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def last_run(runlog: Path, where: str) -> dict[str, Any]:
    """The last run log line of an agent whose task folder or working folder is ``where``."""
    for line in reversed(runlog.read_text().splitlines()):
        rec = json.loads(line)
        if where in (rec.get("task_dir"), rec.get("cwd")):
            return dict(rec)
    raise LookupError(f"no fake agent run for {where}")


class Raw:
    """The floors: what a plain script does per task, with the same agent and tree."""

    def __init__(self, base: Path, repo: Path, runlog: Path) -> None:
        self.base, self.repo, self.runlog = base, repo, runlog
        self.n = 0
        self.prompt = base / "raw-prompt.md"
        self.prompt.write_text(PROMPT)
        self.got: dict[str, list[float]] = {"worktree": [], "fork": [], "changes": [], "cpu": []}

    def task(self) -> float:
        used = cpu()
        self.n += 1
        wt = self.base / f"raw{self.n}"
        t0 = time.perf_counter()
        git(self.repo, "worktree", "add", "-q", "--detach", str(wt))
        self.got["worktree"].append(time.perf_counter() - t0)
        argv = [sys.executable, "-P", "-m", "baton.agents.fake_agent"]
        start = time.time()
        proc = subprocess.Popen(
            [*argv, "--prompt-file", str(self.prompt)],
            cwd=wt,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "BATON_TASK_DIR": str(self.base / "raw-task")},
        )
        if proc.wait() != 0:
            raise RuntimeError(f"the raw fake agent failed ({proc.returncode})")
        t1 = time.perf_counter()
        index = {"GIT_INDEX_FILE": str(self.base / "raw-index")}
        shutil.copy(git(wt, "rev-parse", "--git-path", "index").strip(), self.base / "raw-index")
        git(wt, "add", "-A", env=index)
        if "file zero" not in git(wt, "diff", "--cached", "--no-color", env=index):
            raise RuntimeError("the raw fake agent changed nothing")
        self.got["changes"].append(time.perf_counter() - t1)
        self.got["fork"].append(last_run(self.runlog, str(wt))["time"] - start)
        git(self.repo, "worktree", "remove", "--force", str(wt))
        self.got["cpu"].append(cpu() - used)
        return 0.0


class Broker:
    """Tasks delegated one at a time to a broker in this process, timed from its records."""

    def __init__(self, home: Path, repo: Path, runlog: Path, pool: int | None = None) -> None:
        from baton.config.profiles import default_profiles
        from baton.runtime.supervisor import Limits, Supervisor
        from baton.workspace.pool import PoolLimits

        self.repo, self.runlog = repo, runlog
        self.sup = Supervisor(home, profiles=default_profiles(), limits=Limits(stall_after=120))
        self.pooled = bool(pool)
        if pool is not None:  # a pool of that size whatever the repository's
            self.sup._preparer.pool = PoolLimits(size=pool, min_files=1)
        self.got: dict[str, list[float]] = {"started": [], "spawn": [], "review": [], "cpu": []}
        self.got |= {"git": [], "processes": []}
        self.sources: list[str] = []

    async def task(self) -> float:
        from baton.core.events import EventType
        from baton.process.spawn import read_exit
        from baton.runtime.requests import DelegateRequest
        from baton.store.paths import task_dir

        used = cpu()
        sub = self.sup.subscribe(None)
        t = await self.sup.delegate(DelegateRequest(PROMPT, str(self.repo), worker="fake"))
        reviewed = None
        while reviewed is None:
            e = await asyncio.wait_for(sub.get(), 60)
            if e is None:
                raise RuntimeError("the subscription ended")
            if e.task_id == t.id and e.type == EventType.STATE:
                if e.data["to"] == "review":
                    reviewed = time.time()
                elif e.data["to"] in ("failed", "answered", "cancelled"):
                    raise RuntimeError(f"task {t.id} ended {e.data}")
        sub.close()
        attempt = (await self.sup.attempts(t.id))[-1]
        folder = task_dir(self.sup.home, t.id)
        ended = read_exit(Path(attempt.exit_path))
        assert ended is not None and ended.ended_at
        agent = last_run(self.runlog, str(folder))["time"]
        self.got["started"].append(agent - t.created_at)
        self.got["spawn"].append(attempt.started_at - t.created_at)
        gits, processes = started_between(t.created_at, attempt.started_at)
        self.got["git"].append(gits)
        self.got["processes"].append(processes)
        self.got["review"].append(reviewed - ended.ended_at)
        self.got["cpu"].append(cpu() - used)  # its agent's share once its wrapper is reaped
        self.sources.append(str((await self.sup.get(t.id)).options.get("checkout")))
        if self.pooled:  # the refill, after the task: not timed
            await asyncio.to_thread(self.sup._preparer.refills.wait_idle, 600)
        return 0.0


async def main(tasks: int, files: int, sandbox: str = "auto") -> None:
    base = Path(tempfile.mkdtemp(prefix="baton-bench-"))
    count_processes()
    try:
        runlog = base / "runs.jsonl"
        os.environ["BATON_FAKE_RUNLOG"] = str(runlog)
        if sandbox != "auto":  # the user's setting, as a user would write it
            (base / "user.toml").write_text(f'sandbox = "{sandbox}"\n')
            os.environ["BATON_CONFIG"] = str(base / "user.toml")
        repo = make_repo(base, files)
        raw = Raw(base, repo, runlog)
        brokers = {"broker": Broker(base / "state", repo, runlog)}
        if files > 20:
            brokers = {
                "pool": Broker(base / "state-pool", repo, runlog, pool=1),
                "fresh": Broker(base / "state-fresh", repo, runlog, pool=0),
            }
        for b in brokers.values():
            await b.sup.start()
        try:
            raw.task()  # warm: page cache, git's and python's start-up, the broker's imports
            for b in brokers.values():
                await b.task()  # and, for the pool's broker, its first fill
            for d in (*raw.got.values(), *(v for b in brokers.values() for v in b.got.values())):
                d.clear()
            for b in brokers.values():
                b.sources.clear()
            for i in range(tasks):
                order = list(brokers.values())
                if i % 2:
                    raw.task()
                    order.reverse()
                for b in order:
                    await b.task()
                if not i % 2:
                    raw.task()
        finally:
            for b in brokers.values():
                await b.sup.close()
                await b.sup._preparer.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    floors = {k: median(v) * 1000 for k, v in raw.got.items()}
    size = "a tiny repository" if files <= 20 else f"{files} files"
    how = "" if sandbox == "auto" else f", sandbox {sandbox}"
    print(f"{tasks} sequential tasks on {size}{how}, load {' '.join(map(str, load()))}")
    of = "sequential tasks, floors interleaved"
    for name, b in brokers.items():
        ms = {k: median(v) * 1000 for k, v in b.got.items()}
        where = (
            "" if name == "broker" else f" broker (checkouts: {', '.join(sorted(set(b.sources)))})"
        )
        print(f"  {name}{where}")
        for key, label in (
            ("started", "created → agent started"),
            ("spawn", "created → spawn"),
            ("review", "agent exited → review"),
        ):
            print(f"    {label:<26} {ms[key]:7.1f} ms")
        own = ms["started"] - floors["fork"]
        for key, what in (("git", "git processes"), ("processes", "processes")):
            count = statistics.mean(b.got[key])
            print(f"    {what + ' to spawn':<26} {count:7.1f}  (per task, mean)")
        share = "Baton's own share"
        print(f"    {share:<26} {own:7.1f} ms  (created → agent started less the raw start)")
        repo_is = (
            "tiny repo"
            if files <= 20
            else f"{files} files" + (", warm pool" if b.pooled else ", no pool")
        ) + ("" if sandbox == "auto" else ", unsandboxed")
        figure(
            f"created → agent started, {repo_is}",
            ms["started"],
            floors["fork"],
            "raw fork/exec of the same fake agent, to its first act",
            runs=tasks,
            of=of,
            **_goal(b.pooled, 100),
        )
        measure(
            f"Baton's own share of created → agent started, {repo_is}"
            " (its median less the raw fork/exec's)",
            own,
            "ms",
        )
        for key, what in (("git", "git processes"), ("processes", "processes")):
            measure(
                f"{what} the broker started per task, created → spawn, {repo_is}",
                statistics.mean(b.got[key]),
                "processes",
            )
        figure(
            f"created → spawn, {repo_is}",
            ms["spawn"],
            floors["worktree"],
            "raw git worktree add of the same tree",
            runs=tasks,
            of=of,
            **_goal(files <= 20, 25),
        )
        figure(
            f"CPU per task, {repo_is}",
            statistics.mean(b.got["cpu"]) * 1000,
            statistics.mean(raw.got["cpu"]) * 1000,
            "the raw script's CPU with its children: worktree, agent, add -A + diff",
            stat="mean",
            runs=tasks,
            of=of,
        )
        figure(
            f"agent exited → review, {repo_is}",
            ms["review"],
            floors["changes"],
            "raw git add -A + git diff --cached in the raw worktree",
            runs=tasks,
            of=of,
            **_goal(files <= 20, 25),
        )


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=20)
    p.add_argument("--files", type=int, default=20, help="files in the repository (≥ 20)")
    p.add_argument("--quick", action="store_true", help="4 tasks")
    p.add_argument(
        "--sandbox",
        choices=("auto", "off"),
        default="auto",
        help="off: agents unsandboxed, as in orchestrators with no sandbox (default: auto)",
    )
    add_server_path(p)
    a = p.parse_args()
    use_server(a.server_path)
    asyncio.run(main(4 if a.quick else a.tasks, max(20, a.files), a.sandbox))
