"""The crash lab: brokers in subprocesses that die at named crash points, and their restart.

A :class:`Lab` belongs to one test: a state home, a git repository and a run log the fake
agent appends to (``BATON_FAKE_RUNLOG``, one line per agent process). ``lab.broker(...)``
starts a broker in a subprocess with ``BATON_CRASH_AT`` set; :meth:`Broker.wait_killed`
insists that it died by SIGKILL, so a crash point the engine does not reach (or does not
mark) fails the test loudly instead of letting it pass. ``lab.restart()`` starts the next
broker in this process; the checks in :mod:`tests.crash.invariants` then judge what it made
of the wreck.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from baton.core.lifecycle import TaskState
from baton.runtime.supervisor import Limits, Supervisor
from baton.store.paths import task_dir
from tests.conftest import fake_script

S = TaskState
#: States a task rests in until somebody (not its agent, not a timer) moves it.
RESTING = frozenset(
    {S.REVIEW, S.NEEDS_INPUT, S.ANSWERED, S.FAILED, S.CANCELLED, S.INTERRUPTED}
    | {S.APPLIED, S.REJECTED}
)
#: How long a test waits for a broker to do anything (the machine may be loaded).
DEADLINE = 45.0

#: The broker a test kills. argv: <home> <job file>. It prints JSON lines to stdout:
#: {"started"}, {"tasks": [ids]}, then what it did; with "stay" it sleeps until killed,
#: else it exits with code 3 once every task rests ("ran to the end without crashing").
BROKER = r"""
import asyncio, json, sys
from pathlib import Path
from baton.core.brief import Diagnostic
from baton.core.task import Target
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor

RESTING = {"review", "needs_input", "answered", "failed", "cancelled", "interrupted",
           "applied", "rejected"}

def say(obj):
    print(json.dumps(obj), flush=True)

def request(obj):
    obj = dict(obj)
    obj["diagnostics"] = [Diagnostic(**d) for d in obj.get("diagnostics", ())]
    obj["targets"] = [Target(**t) for t in obj.get("targets", ())]
    return DelegateRequest(**obj)

async def main():
    home = Path(sys.argv[1])
    job = json.loads(Path(sys.argv[2]).read_text())
    sup = Supervisor(home)
    if job.get("pool"):
        from baton.workspace.pool import PoolLimits
        sup._preparer.pool = PoolLimits(**job["pool"])
    await sup.start()
    say({"started": sup.id})
    ids = list(job.get("tasks", ()))
    for r in job.get("delegate", ()):
        ids.append((await sup.delegate(request(r))).id)
    say({"tasks": ids})
    if job.get("accept"):
        result = await sup.accept(job["accept"])
        say({"accepted": sorted(result.applied)})
    if job.get("reject"):
        say({"rejected": await sup.reject(job["reject"])})
    if job.get("reopen"):
        tid, hunks = job["reopen"]
        say({"reopened": (await sup.reopen(tid, hunks)).decided})
    if job.get("edit"):
        from baton.runtime.editing import TaskEdit
        tid, change = job["edit"]
        say({"edited": str((await sup.edit(tid, TaskEdit(**change))).state)})
    if job.get("approve"):
        from baton.runtime import Planning
        created = await Planning(sup).approve(job["approve"])
        say({"approved": {k: t.id for k, t in created.items()}})
    if job.get("stay"):
        await asyncio.sleep(3600)
    while True:
        states = {t: str((await sup.get(t)).state) for t in ids}
        if all(s in RESTING for s in states.values()):
            break
        await asyncio.sleep(0.05)
    say({"ran_to_the_end": states})
    await sup.close()
    sys.exit(3)

asyncio.run(main())
"""


@dataclass
class Broker:
    """A broker subprocess and what it printed."""

    proc: subprocess.Popen[bytes]
    out: Path
    err: Path
    crash_at: str | None

    def lines(self) -> list[dict[str, Any]]:
        out = []
        for line in self.out.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
        return out

    def printed(self, key: str) -> Any:
        return next((line[key] for line in self.lines() if key in line), None)

    def ids(self, timeout: float = DEADLINE) -> list[str]:
        """The ids of the tasks it delegated (or was given), once it printed them."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ids = self.printed("tasks")
            if ids is not None:
                return [str(i) for i in ids]
            if self.proc.poll() is not None:
                raise AssertionError(f"the broker ended before delegating; {self.report()}")
            time.sleep(0.02)
        raise AssertionError(f"the broker printed no task ids in {timeout:.0f} s; {self.report()}")

    def report(self) -> str:
        tail = self.err.read_text(errors="replace")[-3000:]
        said = str(self.lines())
        said = said if len(said) < 800 else said[:800] + "…"
        return f"exit {self.proc.returncode}, stdout {said}, stderr tail:\n{tail}"

    def wait_killed(self, timeout: float = DEADLINE) -> None:
        """Wait for its SIGKILL; fail loudly when it ends otherwise or outlives ``timeout``."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"the broker armed with BATON_CRASH_AT={self.crash_at} was still running after "
                f"{timeout:.0f} s: the crash point was never reached; {self.report()}"
            ) from None
        if code != -signal.SIGKILL:
            raise AssertionError(
                f"the broker armed with BATON_CRASH_AT={self.crash_at} did not die by SIGKILL "
                f"(return code {code}): the crash point never fired — not placed in the "
                f"engine, or not on this path; {self.report()}"
            )

    def kill(self) -> None:
        """SIGKILL from outside (a random crash) and reap it."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


@dataclass
class Lab:
    home: Path
    repo: Path
    runlog: Path
    scratch: Path
    brokers: list[Broker] = field(default_factory=list)
    sups: list[Supervisor] = field(default_factory=list)
    #: path → the text the user wrote into the repo while no broker ran.
    user_edits: dict[str, str] = field(default_factory=dict)

    @property
    def broker_tmp(self) -> Path:
        """The temporary folder (``TMPDIR``) of the brokers this lab starts."""
        folder = self.scratch / "broker-tmp"
        folder.mkdir(exist_ok=True)
        return folder

    # -- brokers ---------------------------------------------------------------------------

    def broker(
        self,
        *,
        crash_at: str | None = None,
        delegate: Sequence[dict[str, Any]] = (),
        tasks: Sequence[str] = (),
        accept: str | None = None,
        reject: str | None = None,
        reopen: tuple[str, list[str]] | None = None,
        edit: tuple[str, dict[str, Any]] | None = None,
        approve: str | None = None,
        stay: bool = False,
        pool: dict[str, int] | None = None,
    ) -> Broker:
        """A broker subprocess on this lab's home, armed with ``crash_at`` when given;
        ``pool``: the limits of its warm pool (:class:`baton.workspace.pool.PoolLimits`)."""
        n = len(self.brokers)
        job = self.scratch / f"broker-{n}.json"
        job.write_text(
            json.dumps(
                {
                    "delegate": list(delegate),
                    "tasks": list(tasks),
                    "accept": accept,
                    "reject": reject,
                    "reopen": list(reopen) if reopen else None,
                    "edit": list(edit) if edit else None,
                    "approve": approve,
                    "stay": stay,
                    "pool": pool,
                }
            )
        )
        env = os.environ.copy()
        env.pop("BATON_CRASH_AT", None)
        env["TMPDIR"] = str(self.broker_tmp)  # what a killed broker leaves there is checked
        if crash_at:
            env["BATON_CRASH_AT"] = crash_at
        out, err = self.scratch / f"broker-{n}.out", self.scratch / f"broker-{n}.err"
        with out.open("wb") as o, err.open("wb") as e:
            proc = subprocess.Popen(
                [sys.executable, "-c", BROKER, str(self.home), str(job)],
                stdin=subprocess.DEVNULL,
                stdout=o,
                stderr=e,
                env=env,
            )
        broker = Broker(proc, out, err, crash_at)
        self.brokers.append(broker)
        return broker

    async def restart(self) -> Supervisor:
        """The next broker, in this process (it adopts what the dead one left)."""
        sup = Supervisor(self.home, limits=Limits(kill_grace=1.0))
        await sup.start()
        self.sups.append(sup)
        return sup

    async def settle_in(
        self, sup: Supervisor, ids: Iterable[str], timeout: float = DEADLINE
    ) -> None:
        """Wait until every task rests (review, answered, failed…); fail naming the laggards."""
        ids = list(ids)
        deadline = time.monotonic() + timeout
        while True:
            states = {t: (await sup.get(t)).state for t in ids}
            if all(s in RESTING for s in states.values()):
                return
            if time.monotonic() > deadline:
                msgs = {t: (await sup.get(t)).message for t in ids}
                raise AssertionError(
                    f"tasks still moving after {timeout:.0f} s: "
                    + ", ".join(f"{t} {s} ({msgs[t]!r})" for t, s in states.items())
                )
            await asyncio.sleep(0.05)

    async def recorded(
        self, sup: Supervisor, requests: Sequence[dict[str, Any]]
    ) -> list[str | None]:
        """The id of the task each delegate request made, None where the broker died first
        (a broker may die while it is still delegating the later ones)."""
        tasks = await sup.list_tasks(limit=None)
        made = {t.instruction: t.id for t in tasks}
        return [made.get(r["instruction"]) for r in requests]

    async def the_task(self, sup: Supervisor, request: dict[str, Any]) -> str:
        """The id of the one task ``request`` made (the dead broker may not have said it)."""
        [tid] = await self.recorded(sup, [request])
        assert tid is not None, "the broker died before it recorded the task"
        return tid

    # -- the user's side -------------------------------------------------------------------

    def edit_repo(self, rel: str, old: str, new: str) -> str:
        """The user edits a file of the project (no broker watching); returns its new text."""
        path = self.repo / rel
        text = path.read_text()
        assert old in text, f"{rel} has no {old!r}"
        text = text.replace(old, new, 1)
        path.write_text(text)
        self.user_edits[rel] = text
        return text

    # -- agent processes -------------------------------------------------------------------

    def runs(self, task_id: str | None = None) -> list[dict[str, Any]]:
        """The fake agent's runs (one per process), of one task or of all."""
        if not self.runlog.exists():
            return []
        runs = [json.loads(line) for line in self.runlog.read_text().splitlines() if line]
        if task_id is None:
            return runs
        folder = str(task_dir(self.home, task_id))
        return [r for r in runs if r.get("task_dir") == folder]

    def lingering(self) -> list[str]:
        """Processes still about from this lab's home: agents, wrappers, anything whose
        command line or working folder is inside it (our own brokers excepted)."""
        mine = {os.getpid()} | {b.proc.pid for b in self.brokers if b.proc.poll() is None}
        home = str(self.home)
        found = []
        for p in psutil.process_iter(["pid", "cmdline", "cwd", "status"]):
            if p.info["pid"] in mine or p.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            cmd = " ".join(p.info.get("cmdline") or [])
            cwd = p.info.get("cwd") or ""
            if home in cmd or cwd == home or cwd.startswith(home + os.sep):
                found.append(f"pid {p.info['pid']} ({cmd[:160]!r} in {cwd})")
        for run in self.runs():
            if alive(run) and not any(f"pid {run['pid']} " in f for f in found):
                found.append(f"agent pid {run['pid']} ({run.get('cwd')})")
        return found

    async def no_lingering(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            left = await asyncio.to_thread(self.lingering)
            if not left:
                return
            if time.monotonic() > deadline:
                raise AssertionError("processes left behind: " + "; ".join(left))
            await asyncio.sleep(0.2)

    async def close(self) -> None:
        """End what the test started: its brokers, then any agent or wrapper still about."""
        for b in self.brokers:
            b.kill()
        for sup in self.sups:
            with contextlib.suppress(Exception):
                await sup.close()
        for run in self.runs():
            if alive(run):
                with contextlib.suppress(OSError):
                    os.kill(run["pid"], signal.SIGKILL)
                if run["pgid"] not in (os.getpgrp(), run["pid"]):  # its wrapper's group
                    with contextlib.suppress(OSError):
                        os.killpg(run["pgid"], signal.SIGKILL)
        home = str(self.home)
        for p in psutil.process_iter(["pid", "cmdline"]):
            cmd = p.info.get("cmdline") or []
            wrapper = "baton.process.wrap" in cmd and any(home in a for a in cmd)
            if wrapper and p.info["pid"] != os.getpid():
                with contextlib.suppress(psutil.Error):
                    p.kill()


def alive(run: dict[str, Any]) -> bool:
    """Whether the agent process of a run-log line still runs (not a reused pid, no zombie)."""
    try:
        p = psutil.Process(int(run["pid"]))
        same = abs(p.create_time() - float(run["time"])) < 10.0
        return same and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def delegate_json(
    steps: Sequence[dict[str, Any]],
    root: Path,
    *,
    summary: str | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A delegate request (as the broker script reads it) carrying a fake agent's script."""
    return {"instruction": fake_script(*steps, summary=summary), "root": str(root), **fields}
