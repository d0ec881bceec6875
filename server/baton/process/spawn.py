"""Detached agent processes: start them, tell whether they live, stop them, read how they ended.

An agent process is started through :mod:`baton.process.wrap` as the leader of a new session
and process group (so ``pid == pgid``), with stdout and stderr going to files in the task's
folder (``attempt-<n>.out`` / ``attempt-<n>.err``) and an exit record written by the wrapper
to ``attempt-<n>.exit``. Nothing ties the process to the broker that started it: a later
broker adopts it from its :class:`ProcessRecord` alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from baton.agents.base import AgentNotFound, Launch, Parser
from baton.core.events import Event

#: Two create times closer than this are the same process (psutil's clock is jiffy-based).
_CREATE_TIME_TOLERANCE = 0.05

#: Wrappers this broker started and has not reaped yet (so they do not linger as zombies).
_children: dict[int, subprocess.Popen[bytes]] = {}


@dataclass(frozen=True, slots=True)
class ProcessRecord:
    """Everything needed to find, stop and read an agent process, even from another broker."""

    pid: int  # the wrapper's pid, which is also the process group id
    out_path: Path
    err_path: Path
    exit_path: Path
    started_at: float
    create_time: float  # psutil's create time of ``pid``, to tell a reused pid apart

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "out_path": str(self.out_path),
            "err_path": str(self.err_path),
            "exit_path": str(self.exit_path),
            "started_at": self.started_at,
            "create_time": self.create_time,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ProcessRecord:
        return cls(
            pid=int(obj["pid"]),
            out_path=Path(obj["out_path"]),
            err_path=Path(obj["err_path"]),
            exit_path=Path(obj["exit_path"]),
            started_at=float(obj["started_at"]),
            create_time=float(obj.get("create_time", 0.0)),
        )


@dataclass(frozen=True, slots=True)
class ExitRecord:
    """How an agent process ended, as its wrapper wrote it down."""

    code: int  # the exit code; 128 + n when signal n killed it; 127 when it never started
    signal: str | None = None  # the signal that killed the agent ("SIGTERM")
    received: str | None = None  # the signal the wrapper was sent (a cancel), if any
    error: str | None = None  # why the agent could not be started
    ended_at: float = 0.0


def attempt_paths(task_dir: Path, attempt: int) -> tuple[Path, Path, Path]:
    """The stdout, stderr and exit-record paths of one attempt."""
    stem = task_dir / f"attempt-{attempt}"
    return stem.with_suffix(".out"), stem.with_suffix(".err"), stem.with_suffix(".exit")


def agent_env(launch: Launch) -> dict[str, str]:
    """The agent's environment: a copy of ours minus ``unset_env``, plus ``launch.env``.

    ``PWD`` is the agent's working folder, never the broker's: some CLIs (OpenCode) take
    ``$PWD`` as their project and would otherwise work in the user's tree.
    """
    env = {k: v for k, v in os.environ.items() if k not in set(launch.unset_env)}
    if launch.cwd:
        env["PWD"] = launch.cwd
    env.update(launch.env)
    return env


def resolve_binary(argv0: str, cwd: str, env: Mapping[str, str]) -> str:
    """The executable ``argv0`` names, or :class:`AgentNotFound` saying why there is none."""
    if not argv0:
        raise AgentNotFound("no agent command given (empty argv)")
    if os.sep in argv0:
        path = argv0 if os.path.isabs(argv0) else os.path.join(cwd or os.getcwd(), argv0)
        if not os.path.isfile(path):
            raise AgentNotFound(f"agent binary {argv0!r} does not exist")
        if not os.access(path, os.X_OK):
            raise AgentNotFound(f"agent binary {argv0!r} is not executable")
        return path
    found = shutil.which(argv0, path=env.get("PATH", os.defpath))
    if found is None:
        raise AgentNotFound(
            f"agent binary {argv0!r} was not found on PATH; install it or set the "
            "profile's binary to its full path"
        )
    return found


def spawn(launch: Launch, task_dir: Path, attempt: int) -> ProcessRecord:
    """Start ``launch`` detached, with its output in ``task_dir``; return how to find it again.

    Raises :class:`AgentNotFound` before starting anything when the binary is missing, and
    :class:`FileNotFoundError` when ``launch.cwd`` is not a folder.
    """
    reap()
    env = agent_env(launch)
    cwd = launch.cwd or str(task_dir)
    resolve_binary(launch.argv[0] if launch.argv else "", cwd, env)
    task_dir.mkdir(parents=True, exist_ok=True)
    if not os.path.isdir(cwd):
        raise FileNotFoundError(f"the agent's working folder {cwd!r} does not exist")
    out_path, err_path, exit_path = attempt_paths(task_dir, attempt)
    exit_path.unlink(missing_ok=True)  # a stale record would say this attempt already ended
    stdin_path: Path | None = None
    if launch.stdin is not None:
        stdin_path = task_dir / f"attempt-{attempt}.in"
        stdin_path.write_text(launch.stdin, encoding="utf-8")
    # -P: the agent's cwd (a worktree, maybe of Baton itself) must not shadow our package.
    argv = [sys.executable, "-P", "-m", "baton.process.wrap", str(exit_path), "--", *launch.argv]
    with contextlib.ExitStack() as files:
        stdin = files.enter_context(
            open(stdin_path, "rb") if stdin_path else open(os.devnull, "rb")  # noqa: SIM115
        )
        stdout = files.enter_context(open(out_path, "wb"))
        stderr = files.enter_context(open(err_path, "wb"))
        started_at = time.time()
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            close_fds=True,
        )
    _children[proc.pid] = proc
    try:
        create_time = float(psutil.Process(proc.pid).create_time())
    except psutil.Error:  # already gone and reaped: nothing to tell apart later
        create_time = 0.0
    return ProcessRecord(proc.pid, out_path, err_path, exit_path, started_at, create_time)


def read_exit(exit_path: Path) -> ExitRecord | None:
    """The exit record at ``exit_path``, or None while there is none (or it is unreadable)."""
    try:
        obj = json.loads(exit_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("exit"), int):
        return None
    return ExitRecord(
        code=obj["exit"],
        signal=obj.get("signal"),
        received=obj.get("received"),
        error=obj.get("error"),
        ended_at=float(obj.get("ended_at") or 0.0),
    )


def _reap(pid: int) -> None:
    proc = _children.get(pid)
    if proc is not None and proc.poll() is not None:
        del _children[pid]


def reap() -> int:
    """Collect the exit status of every wrapper this broker started that has ended (so none
    lingers as a zombie); returns how many still run. Called by :func:`spawn` and the
    liveness checks; cheap enough to call from any periodic tick."""
    for pid in list(_children):
        _reap(pid)
    return len(_children)


def _process(pid: int, create_time: float | None) -> psutil.Process | None:
    """The live process ``pid`` if it is the one created at ``create_time``; zombies are dead."""
    _reap(pid)
    try:
        proc = psutil.Process(pid)
        if create_time and abs(proc.create_time() - create_time) > _CREATE_TIME_TOLERANCE:
            return None  # the pid was reused by another process
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
    except psutil.Error:
        return None
    return proc


def is_alive(pid: int, create_time: float | None = None) -> bool:
    """Whether ``pid`` runs (zombies count as dead); with ``create_time``, the same process."""
    return _process(pid, create_time) is not None


def _gone(proc: psutil.Process) -> bool:
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def _group_members(pgid: int) -> list[psutil.Process]:
    members = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid:
                members.append(proc)
        except OSError:
            continue
    return members


def _signal_all(pgid: int, procs: Iterable[psutil.Process], sig: signal.Signals) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pgid, sig)
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(sig)


async def _wait_gone(procs: list[psutil.Process], within: float) -> list[psutil.Process]:
    deadline = time.monotonic() + within
    while True:
        alive = [p for p in procs if not _gone(p)]
        if not alive or time.monotonic() >= deadline:
            return alive
        await asyncio.sleep(0.01)


async def kill_tree(pid: int, grace: float = 3.0, create_time: float | None = None) -> None:
    """Stop the agent whose wrapper is ``pid``, its group and all its descendants.

    Every descendant (also those that started a session of their own) and every member of
    the group is collected BEFORE anything is signalled; all get SIGTERM, then SIGKILL after
    ``grace`` seconds. Returns when all are gone. With ``create_time``, a reused pid is left
    alone (a group cannot outlive its last member, so nothing of ours is left then).
    """
    root = None
    with contextlib.suppress(psutil.Error):
        root = psutil.Process(pid)
        if create_time and abs(root.create_time() - create_time) > _CREATE_TIME_TOLERANCE:
            return
    procs: dict[int, psutil.Process] = {}
    if root is not None:
        procs[root.pid] = root
        with contextlib.suppress(psutil.Error):
            procs.update((p.pid, p) for p in root.children(recursive=True))
    for member in _group_members(pid):
        procs.setdefault(member.pid, member)
        with contextlib.suppress(psutil.Error):
            procs.update((p.pid, p) for p in member.children(recursive=True))
    targets = list(procs.values())
    _signal_all(pid, targets, signal.SIGTERM)
    alive = await _wait_gone(targets, grace)
    if alive:
        _signal_all(pid, alive, signal.SIGKILL)
        await _wait_gone(alive, 5.0)
    _reap(pid)


def stderr_tail(path: Path, limit: int = 4000) -> str:
    """The last ``limit`` characters (about) of a stderr file; "" when there is none."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            data = f.read()
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")[-limit:]


async def wait_exit(
    record: ProcessRecord, poll: float = 0.02, alive_every: float = 0.5
) -> ExitRecord | None:
    """Wait until the process has ended; its exit record, or None if it vanished without one.

    Looks for the exit record every ``poll`` seconds (a cheap stat) and asks whether the
    process still lives every ``alive_every`` seconds (the wrapper was SIGKILLed: no record).
    """
    next_alive_check = time.monotonic() + alive_every
    while True:
        if record.exit_path.exists():
            found = read_exit(record.exit_path)
            if found is not None:
                _reap(record.pid)  # usually still exiting; the next reap() collects it
                return found
        if time.monotonic() >= next_alive_check:
            next_alive_check = time.monotonic() + alive_every
            if not is_alive(record.pid, record.create_time):
                # The wrapper writes the record before exiting: look once more, then give up.
                return read_exit(record.exit_path)
        await asyncio.sleep(poll)


@dataclass(slots=True)
class AttemptResult:
    """What :func:`run_attempt` saw: the process, its normalized events and how it exited."""

    record: ProcessRecord
    events: list[Event]
    exit: ExitRecord | None


async def run_attempt(
    launch: Launch, parser: Parser, task_dir: Path, attempt: int
) -> AttemptResult:
    """Run one attempt to its end: spawn, tail stdout through ``parser``, then ``finish`` it.

    The plain path without persistence, watchdog or adoption (those are the supervisor's):
    for tests, scripts and benchmarks.
    """
    from baton.process.tail import Tailer  # local: keeps spawning importable on its own

    record = spawn(launch, task_dir, attempt)
    tailer = Tailer(record.out_path)
    events: list[Event] = []

    async def finish_on_exit() -> ExitRecord | None:
        ended = await wait_exit(record)
        tailer.finish()
        return ended

    waiter = asyncio.create_task(finish_on_exit())
    try:
        async for line in tailer:
            events.extend(parser.feed(line))
        ended = await waiter
    finally:
        waiter.cancel()
        tailer.close()
    code = ended.code if ended is not None else None
    events.extend(parser.finish(code, stderr_tail(record.err_path)))
    return AttemptResult(record, events, ended)
