"""Detached agent processes: start them, find them again, stop them, read how they ended.

An agent process is started through :mod:`baton.process.wrap` as the leader of a new session
and process group (so ``pid == pgid``), with stdout and stderr going to files in the task's
folder (``attempt-<n>.out`` / ``attempt-<n>.err``) and an exit record written by the wrapper
to ``attempt-<n>.exit``. Nothing ties the process to the broker that started it: a later
broker adopts it from its :class:`ProcessRecord`, or, when the broker died before it could
record that, finds it from the attempt's claim (``attempt-<n>.lock``, locked by the wrapper
for its whole life, and ``attempt-<n>.pid``) with :func:`find_attempt`.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from baton.agents.base import AgentNotFound, Launch, Parser
from baton.core.events import Event
from baton.errors import BatonError
from baton.process.sandbox import Confinement, confine
from baton.process.spare import hand_over
from baton.process.wrap import IGNORE_STOP, take_lock
from baton.process.wrap import command as wrapper_command

log = logging.getLogger(__name__)

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


class AttemptRunning(BatonError, FileExistsError):
    """A live process already holds the claim of the attempt that was to be started."""


def attempt_paths(task_dir: Path, attempt: int) -> tuple[Path, Path, Path]:
    """The stdout, stderr and exit-record paths of one attempt."""
    stem = task_dir / f"attempt-{attempt}"
    return stem.with_suffix(".out"), stem.with_suffix(".err"), stem.with_suffix(".exit")


def claim_paths(task_dir: Path, attempt: int) -> tuple[Path, Path]:
    """The lock and pid file by which one attempt's process is found (see :func:`find_attempt`)."""
    stem = task_dir / f"attempt-{attempt}"
    return stem.with_suffix(".lock"), stem.with_suffix(".pid")


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


def spawn(
    launch: Launch, task_dir: Path, attempt: int, confinement: Confinement | None = None
) -> ProcessRecord:
    """Start ``launch`` detached, with its output in ``task_dir``; return how to find it again.

    The agent runs in the OS sandbox (:mod:`baton.process.sandbox`) as ``confinement`` says;
    None means the default, ``sandbox = "auto"`` with the network allowed. The wrapper stays
    outside it (its claim, pid file and exit record are in the task's folder, which the agent
    does not see): ``wrap → bwrap → agent``.

    The attempt's claim is taken here, before the process exists, and handed to the wrapper,
    which holds it for its whole life: from this call on, :func:`find_attempt` finds the
    process even if the caller dies before it records the returned :class:`ProcessRecord`.

    Raises :class:`AgentNotFound` before starting anything when the binary is missing,
    :class:`FileNotFoundError` when ``launch.cwd`` is not a folder,
    :class:`~baton.process.sandbox.SandboxUnavailable` when a sandbox is required and none
    can run, and :class:`AttemptRunning` when a live process already holds attempt
    ``attempt`` (its output is left untouched).
    """
    reap()
    env = agent_env(launch)
    cwd = launch.cwd or str(task_dir)
    resolve_binary(launch.argv[0] if launch.argv else "", cwd, env)
    task_dir.mkdir(parents=True, exist_ok=True)
    if not os.path.isdir(cwd):
        raise FileNotFoundError(f"the agent's working folder {cwd!r} does not exist")
    if confinement is None:
        confinement = confine(launch, task_dir, env)
    env.update(confinement.env)
    out_path, err_path, exit_path = attempt_paths(task_dir, attempt)
    lock_path, pid_path = claim_paths(task_dir, attempt)
    lock_fd = take_lock(str(lock_path))
    if lock_fd is None:
        raise AttemptRunning(
            f"attempt {attempt} in {task_dir} already has a live process (see find_attempt)"
        )
    try:
        pid_path.unlink(missing_ok=True)  # the wrapper writes its own
        exit_path.unlink(missing_ok=True)  # a stale record would say this attempt already ended
        stdin_path: Path | None = None
        if launch.stdin is not None:
            stdin_path = task_dir / f"attempt-{attempt}.in"
            stdin_path.write_text(launch.stdin, encoding="utf-8")
        agent = confinement.bare(_argv(launch, confinement))
        ignore = [IGNORE_STOP] if confinement.sandboxed and confinement.ignoring else []
        with contextlib.ExitStack() as files:
            stdin = files.enter_context(
                open(stdin_path, "rb") if stdin_path else open(os.devnull, "rb")  # noqa: SIM115
            )
            stdout = files.enter_context(open(out_path, "wb"))
            stderr = files.enter_context(open(err_path, "wb"))
            started_at = time.time()
            stdio = [lock_fd, stdin.fileno(), stdout.fileno(), stderr.fileno()]
            proc = hand_over([*ignore, str(exit_path)], cwd, agent, env, stdio)
            if proc is None:  # no spare wrapper took it: one is started for it
                # Isolated (-I): the agent's cwd (a worktree, maybe of Baton itself) must
                # not shadow our package, nor the environment change how the wrapper runs.
                proc = subprocess.Popen(
                    [*wrapper_command(), "--lock-fd", str(lock_fd), *ignore, str(exit_path),
                     "--", *agent],
                    cwd=cwd, env=env, stdin=stdin, stdout=stdout, stderr=stderr,
                    start_new_session=True, close_fds=True, pass_fds=(lock_fd,),
                )  # fmt: skip
    finally:
        os.close(lock_fd)  # the wrapper holds the lock now (or, if it did not start, nobody)
    _children[proc.pid] = proc
    try:
        create_time = float(psutil.Process(proc.pid).create_time())
    except psutil.Error:  # already gone and reaped: nothing to tell apart later
        create_time = 0.0
    return ProcessRecord(proc.pid, out_path, err_path, exit_path, started_at, create_time)


def _held(lock_path: Path) -> bool:
    """Whether some process holds the ``flock`` of ``lock_path`` (a probe of an instant)."""
    try:
        fd = os.open(lock_path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases the probe's lock, if it got it
    return False


def _read_claim(pid_path: Path) -> dict[str, Any] | None:
    try:
        obj = json.loads(pid_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return obj if isinstance(obj, dict) and isinstance(obj.get("pid"), int) else None


def find_attempt(task_dir: Path, attempt: int, wait: float = 5.0) -> ProcessRecord | None:
    """The live process holding attempt ``attempt``'s claim, found from the task's folder
    alone; None when no process holds it.

    The process is the attempt's wrapper (for ACP, the wrapper of the session's runner,
    which holds the claim of every turn it took for as long as it lives): it runs the
    attempt, or ran it — :func:`read_exit` tells. A wrapper that is just starting may hold
    the lock before its pid file is written: this waits up to ``wait`` seconds for it
    (sleeping; call it off the event loop), and says None if it never comes — a
    :func:`spawn` of that attempt then still refuses, since the lock is held.
    """
    lock_path, pid_path = claim_paths(task_dir, attempt)
    out_path, err_path, exit_path = attempt_paths(task_dir, attempt)
    deadline = time.monotonic() + wait
    while _held(lock_path):
        claim = _read_claim(pid_path)
        if claim is not None:
            proc = _process(claim["pid"], float(claim.get("create_time") or 0.0))
            if proc is not None:  # else a stale file: its holder has not written yet
                with contextlib.suppress(psutil.Error):
                    return ProcessRecord(
                        pid=proc.pid,
                        out_path=out_path,
                        err_path=Path(claim.get("err_path") or err_path),
                        exit_path=exit_path,
                        started_at=float(claim.get("started_at") or 0.0),
                        create_time=float(proc.create_time()),
                    )
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)
    return None


def ever_started(task_dir: Path, attempt: int) -> bool:
    """Whether attempt ``attempt`` left any trace of a process: its pid, output or exit file.

    False means no process of it ever ran (it is safe to start); True with no
    :func:`find_attempt` means it ran (or its start was cut short) and is gone.
    """
    out_path, _, exit_path = attempt_paths(task_dir, attempt)
    _, pid_path = claim_paths(task_dir, attempt)
    return any(p.exists() for p in (pid_path, out_path, exit_path))


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
    alone (a group cannot outlive its last member, so nothing of ours is left then). A pid
    below 2 names no agent (0 would be the caller's own group, 1 init): nothing is signalled.
    """
    if pid < 2:
        log.warning("kill_tree: pid %d names no agent process; nothing signalled", pid)
        return
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


def _argv(launch: Launch, confinement: Confinement) -> list[str]:
    """What is started: the launch's argv, or its confined form inside Baton's sandbox."""
    if confinement.sandboxed and launch.confined_argv is not None:
        return list(launch.confined_argv)
    return list(launch.argv)
