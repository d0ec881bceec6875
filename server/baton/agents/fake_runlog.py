"""The fake agent's run log: one JSON line per run, so a test can count agent processes.

When ``BATON_FAKE_RUNLOG`` names a file, :func:`log_run` appends a line to it as the fake
agent starts (``O_APPEND``, one ``write``: lines from concurrent runs never interleave).
Crash tests compare these lines with a task's attempt rows: each attempt must have had
exactly one process. Only the standard library is used; nothing happens when it is unset.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time

ENV = "BATON_FAKE_RUNLOG"

_ATTEMPT_FILE = re.compile(r"attempt-(\d+)\.[a-z]+$")


def attempt_files() -> tuple[str | None, str | None, int | None]:
    """Where this run's stdout goes, its wrapper's exit path, and the attempt they name.

    Read from ``/proc`` (Linux; None elsewhere): stdout's target, and the parent's command
    line when the parent is Baton's wrapper (``python -m baton.process.wrap [--lock-fd N]
    <exit> -- …``), or the attempt lock a spare wrapper holds open.
    """
    out: str | None = None
    exit_path: str | None = None
    with contextlib.suppress(OSError):
        out = os.readlink("/proc/self/fd/1")
    with contextlib.suppress(OSError):
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            parent = [a.decode("utf-8", "surrogateescape") for a in f.read().split(b"\0")]
        if "baton.process.wrap" in parent:
            i = parent.index("baton.process.wrap")
            end = parent.index("--", i) if "--" in parent[i:] else len(parent)
            exit_path = next((a for a in parent[i + 1 : end] if a.endswith(".exit")), None)
            if exit_path is None:  # a spare wrapper: its command line names no attempt
                exit_path = _held_attempt(os.getppid())
    attempt = None
    for name in (exit_path, out):
        found = _ATTEMPT_FILE.search(name or "")
        if found:
            attempt = int(found.group(1))
            break
    return out, exit_path, attempt


def _held_attempt(pid: int) -> str | None:
    """The exit path of the attempt whose lock (``attempt-<n>.lock``) process ``pid`` holds
    open: a spare wrapper's (:mod:`baton.process.spare`), which was handed it."""
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if re.search(r"attempt-\d+\.lock$", target):
                    return target[: -len(".lock")] + ".exit"
    return None


def pid_namespace() -> int | None:
    """The PID namespace this process runs in (its inode), None where it cannot be read. A
    sandboxed agent has one of its own: its pid, ppid and pgid mean nothing outside it."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


def log_run(resume: str | None, prompt_file: str | None) -> None:
    """Append this run to ``$BATON_FAKE_RUNLOG`` (nothing when it is unset).

    The line has ``pid``, ``ppid``, ``pgid``, ``cwd``, ``time``, ``resume`` (the session id
    resumed, or null), ``task_dir`` (``$BATON_TASK_DIR``), ``prompt_file``, ``out`` (where
    stdout goes), ``exit_path`` (the wrapper's), ``attempt`` (the number they name) and
    ``pid_ns`` (:func:`pid_namespace`).
    """
    path = os.environ.get(ENV)
    if not path:
        return
    out, exit_path, attempt = attempt_files()
    record = {
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "pgid": os.getpgrp(),
        "cwd": os.getcwd(),
        "time": time.time(),
        "resume": resume,
        "task_dir": os.environ.get("BATON_TASK_DIR"),
        "prompt_file": prompt_file,
        "out": out,
        "exit_path": exit_path,
        "attempt": attempt,
        "pid_ns": pid_namespace(),
    }
    line = (json.dumps(record) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
