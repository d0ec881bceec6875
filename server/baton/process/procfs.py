"""What Linux's ``/proc`` says of a process, read without psutil (whose import costs more
than a short command's whole run).

The create time is reckoned as psutil reckons it on Linux (boot time + start ticks), so the
two compare equal for the same process.
"""

from __future__ import annotations

import os


class ProcStat:
    """What ``/proc/<pid>/stat`` says of a process (a plain class: ``typing`` costs the
    process wrapper, which reads its own, more than the rest of its start)."""

    __slots__ = ("create_time", "state")

    def __init__(self, state: str, create_time: float) -> None:
        self.state = state  # one letter: R running, S sleeping, Z zombie, …
        self.create_time = create_time  # seconds since the epoch

    def __repr__(self) -> str:
        return f"ProcStat(state={self.state!r}, create_time={self.create_time!r})"


def proc_stat(pid: int) -> ProcStat | None:
    """The state and create time of ``pid``, or None when it does not exist or ``/proc``
    cannot be read (not Linux)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
        fields = raw[raw.rindex(b")") + 2 :].split()
        with open("/proc/stat", "rb") as f:
            btime = next(float(line.split()[1]) for line in f if line.startswith(b"btime"))
        ticks = int(fields[19])
        return ProcStat(fields[0].decode("ascii"), btime + ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def proc_available() -> bool:
    """Whether this system has a ``/proc`` to read (Linux)."""
    return os.path.exists("/proc/self/stat")


def process_id(pid: int | None = None) -> str:
    """``pid:create_time`` of a process (default: this one) — unique even when pids are
    reused (the create time as psutil reckons it, read from ``/proc`` where there is one).
    A broker's id is its process's."""
    pid = os.getpid() if pid is None else pid
    found = proc_stat(pid)
    if found is not None:
        return f"{pid}:{found.create_time:.3f}"
    import psutil

    return f"{pid}:{psutil.Process(pid).create_time():.3f}"
