"""The wrapper's reaper: when an attempt ends, everything it started is gone.

Three pieces, used by :mod:`baton.process.wrap` (so: standard library only, cheap to import):

- :func:`become_subreaper` — ``PR_SET_CHILD_SUBREAPER`` on the wrapper, so a process the
  agent orphans (a daemon, a shell's background job, one that called ``setsid``) is
  reparented to the wrapper, not to init, and stays findable as its descendant.
- :func:`die_with` — a ``preexec_fn`` giving the agent ``PR_SET_PDEATHSIG(SIGKILL)``: if the
  wrapper is killed (even with SIGKILL), the agent is killed too. ``getppid`` is checked
  again after setting it, since the wrapper may have died just before.
- :func:`end_leftovers` — once the agent has exited: every descendant of the wrapper and
  every other member of its process group and session gets SIGTERM, then SIGKILL after a
  short grace; orphans are reaped. Called before the exit record is written, so a record
  means nothing of the attempt runs any more.
- :func:`strays` — for the ACP runner, which outlives its turns: the processes that came to
  its wrapper as orphans (a tool's background job), ended (:func:`end`) when a turn ends.

A process that starts agents of its own without a ``preexec_fn`` of its choosing (the ACP
runner, through the ACP library) binds them with :func:`bound`: the command line of
``python -P -m baton.process.reaper --die-with PID -- argv…``, which arms the death signal
and then ``exec``s the agent in its own place.

Processes are found in ``/proc`` and the ``prctl`` calls go through ctypes: this is Linux.
Elsewhere the wrapper only signals its process group (SIGTERM) and has no PDEATHSIG.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: the wrapper starts here
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable
else:  # the C module behind ``signal``, without the enums whose making costs 6 ms a start
    import _signal as signal

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
#: Seconds what the agent left gets between SIGTERM and SIGKILL.
LEFTOVER_GRACE = 1.0
#: Seconds after the SIGKILL at which the wrapper stops waiting (a process stuck in the
#: kernel); what is still there then is reported, not waited for.
KILL_WAIT = 5.0

_prctl: Callable[..., int] | None = None


def _load_prctl() -> Callable[..., int] | None:
    global _prctl
    if _prctl is None and sys.platform.startswith("linux"):
        try:
            fn = ctypes.CDLL(None, use_errno=True).prctl  # the C library is loaded already
            fn.argtypes = [ctypes.c_int, *[ctypes.c_ulong] * 4]
            fn.restype = ctypes.c_int
            _prctl = fn
        except (OSError, AttributeError):
            pass
    return _prctl


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants; False where it cannot."""
    prctl = _load_prctl()
    return prctl is not None and prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def die_with(parent: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child die (SIGKILL) when ``parent`` dies; None where
    ``prctl`` is unavailable. Loaded here, before the fork: the child only calls it."""
    prctl = _load_prctl()
    if prctl is None:
        return None

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the death signal was armed
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


def bound(argv: list[str], parent: int) -> list[str]:
    """``argv`` started so that it dies when ``parent`` (the process starting it) dies;
    ``argv`` itself where that cannot be had."""
    if _load_prctl() is None:
        return argv
    return [sys.executable, "-P", "-m", "baton.process.reaper", "--die-with", str(parent),
            "--", *argv]  # fmt: skip


def _stat(pid: str) -> tuple[int, int, int, str] | None:
    """``(ppid, pgrp, session, state)`` of ``pid`` from ``/proc``; None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
        fields = raw[raw.rindex(b")") + 2 :].split()
        return int(fields[1]), int(fields[2]), int(fields[3]), fields[0].decode()
    except (OSError, ValueError, IndexError):
        return None


def _table() -> dict[int, tuple[int, int, int, str]]:
    table: dict[int, tuple[int, int, int, str]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = _stat(name)
            if stat is not None:
                table[int(name)] = stat
    return table


def _under(table: dict[int, tuple[int, int, int, str]], roots: list[int]) -> set[int]:
    """Every descendant of ``roots`` (the roots not included unless they descend too)."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _live(table: dict[int, tuple[int, int, int, str]], pids: set[int]) -> list[int]:
    return sorted(pid for pid in pids if table.get(pid, (0, 0, 0, "Z"))[3] not in ("Z", "X"))


def leftovers(me: int) -> list[int]:
    """Live processes (zombies aside) that descend from ``me``, or share its process group or
    session when ``me`` leads them (as a wrapper started in a new session does: a wrapper
    run by hand inside someone else's group must not end that group)."""
    table = _table()
    leads_group, leads_session = os.getpgid(me) == me, os.getsid(me) == me
    members = {
        pid
        for pid, (_, pgrp, sid, _) in table.items()
        if (leads_group and pgrp == me) or (leads_session and sid == me)
    }
    found = members | _under(table, [me, *members])
    found.discard(me)
    return _live(table, found)


def strays(wrapper: int, keep: int) -> list[int]:
    """Live processes under ``wrapper`` outside the tree of ``keep`` (its child): what came
    to the wrapper, their subreaper, because their own parent ended."""
    if not os.path.isdir("/proc/self"):
        return []
    table = _table()
    return _live(table, _under(table, [wrapper]) - _under(table, [keep]) - {keep})


def reap_orphans() -> None:
    """Collect the exit status of every child that has ended (orphans reparented to us)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def end_leftovers(grace: float = LEFTOVER_GRACE) -> list[int]:
    """End every process the agent left (see :func:`leftovers`), reaping them; the pids that
    were signalled. Where ``/proc`` is missing, a SIGTERM to the group is all it can do."""
    if not os.path.isdir("/proc/self"):
        _term_group()
        return []
    me = os.getpid()
    return end(lambda: leftovers(me), grace, reap=True)


def end(find: Callable[[], list[int]], grace: float, reap: bool = False) -> list[int]:
    """SIGTERM to what ``find`` lists, SIGKILL after ``grace`` seconds, until it lists
    nothing (or ``KILL_WAIT`` more seconds passed); the pids that were signalled. With
    ``reap``, ended children are collected on the way (only for a process whose children are
    all to be ended: it would take other children's exit status from their waiters)."""
    signalled: dict[int, int] = {}  # pid → the last signal sent to it
    start = time.monotonic()
    while True:
        if reap:
            reap_orphans()
        left = find()
        if not left:
            return sorted(signalled)
        elapsed = time.monotonic() - start
        if elapsed >= grace + KILL_WAIT:
            return sorted(signalled)
        sig = signal.SIGTERM if elapsed < grace else signal.SIGKILL
        for pid in left:
            if signalled.get(pid) != sig:
                signalled[pid] = sig
                try:
                    os.kill(pid, sig)
                    if sig == signal.SIGTERM:
                        os.kill(pid, signal.SIGCONT)  # a stopped process must run to die
                except OSError:
                    pass
        time.sleep(0.01)


def _term_group() -> None:
    """SIGTERM to the rest of the group we lead, ignoring it ourselves while it is sent."""
    if os.getpgrp() != os.getpid():
        return
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        os.killpg(os.getpgrp(), signal.SIGTERM)
    except OSError:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(args: list[str]) -> int:
    """``--die-with PID -- argv…``: arm the death signal for ``PID``, then become ``argv``."""
    if len(args) < 4 or args[0] != "--die-with" or not args[1].isdigit() or args[2] != "--":
        print("usage: python -m baton.process.reaper --die-with PID -- argv…", file=sys.stderr)
        return 2
    arm = die_with(int(args[1]))
    if arm is not None:
        arm()
    argv = args[3:]
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(f"baton: cannot start {argv[0]!r}: {exc.strerror or exc}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
