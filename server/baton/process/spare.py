"""A spare wrapper: the next attempt's wrapper, started ahead of need.

Starting the wrapper (:mod:`baton.process.wrap`: a Python interpreter and a few modules) is
most of what Baton adds between an attempt's spawn and its agent's ``exec``. So after an
attempt takes it, a spare is started again for the next one (:data:`REFILL_AFTER` later, once
this attempt's agent is under way): ``python -I -S … baton.process.wrap --spare``, the leader
of a session of its own, waiting on a socket for its orders. :func:`hand_over` sends them —
the wrapper's arguments, the agent's working folder and environment — with the attempt's
descriptors (its lock, taken by :func:`~baton.process.spawn.spawn` before anything runs, as
for a wrapper started then; stdin, stdout and stderr), and the spare goes on as any wrapper
does from its claim. A spare holds nothing of an attempt until it is handed one: a broker
that dies leaves its spare the end of the socket, and it exits. Orders that did not reach it
whole are not run (their last field says they are whole); where no spare took them (none
ready, it had ended, sending failed) the caller starts a wrapper as before.
"""

from __future__ import annotations

import array
import atexit
import contextlib
import os
import socket
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from baton.process.wrap import ORDERS, ORDERS_END, SPARE, command

#: Seconds after a spare is taken before the next one starts: the agent of the attempt that
#: took it is starting meanwhile, and a wrapper's start must not compete with it.
REFILL_AFTER = 0.1


@dataclass(frozen=True)
class _Spare:
    proc: subprocess.Popen[bytes]
    sock: socket.socket


_lock = threading.Lock()
_spare: _Spare | None = None
_timer: threading.Timer | None = None
_closed = False


def _start() -> None:
    global _spare, _timer
    with _lock:
        _timer = None
        if _spare is not None or _closed:
            return
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        proc = subprocess.Popen(
            [*command(), SPARE],
            stdin=theirs.fileno(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",  # it holds no folder of anyone's while it waits
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        mine.close()
        return
    finally:
        theirs.close()
    with _lock:
        if _spare is None and not _closed:
            _spare = _Spare(proc, mine)
            return
    mine.close()  # another one is ready (or the process stops): this one ends
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)


def ask() -> None:
    """Have a spare ready :data:`REFILL_AFTER` from now (nothing when one is, or is coming)."""
    global _timer
    with _lock:
        if _closed or _spare is not None or _timer is not None:
            return
        _timer = threading.Timer(REFILL_AFTER, _start)
        _timer.daemon = True
        _timer.start()


def _orders(options: Sequence[str], cwd: str, argv: Sequence[str], env: Mapping[str, str]) -> bytes:
    fields = [ORDERS, os.fsencode(cwd), str(len(options)).encode()]
    fields += [os.fsencode(o) for o in options]
    fields += [str(len(argv)).encode(), *(os.fsencode(a) for a in argv)]
    fields += [os.fsencode(f"{k}={v}") for k, v in env.items()]
    return b"\0".join([*fields, ORDERS_END])


def hand_over(
    options: Sequence[str],
    cwd: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    fds: Sequence[int],
) -> subprocess.Popen[bytes] | None:
    """Give the spare wrapper its attempt: its ``options`` (the wrapper's arguments before
    ``--``, the exit path last) and ``argv`` (the agent's, as the wrapper runs it) in ``cwd``
    with ``env``, and ``fds`` (the attempt's lock, stdin, stdout, stderr); the wrapper's
    process, or None where no spare took it. A next spare is asked for."""
    global _spare
    with _lock:
        spare, _spare = _spare, None
    ask()
    if spare is None or not argv:
        return None
    with spare.sock:
        if spare.proc.poll() is not None:
            return None  # it ended meanwhile (killed?)
        orders = _orders(options, cwd, argv, env)
        rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())]
        try:
            sent = spare.sock.sendmsg([orders], rights)
            spare.sock.sendall(orders[sent:])
        except OSError:
            return None  # orders cut short are not run: it ends
    return spare.proc


def close() -> None:
    """No more spares; the one waiting ends (its socket closes)."""
    global _spare, _closed, _timer
    with _lock:
        _closed = True
        spare, _spare = _spare, None
        timer, _timer = _timer, None  # cancelled: a later ask() must not wait for it
    if timer is not None:
        timer.cancel()
    if spare is not None:
        spare.sock.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            spare.proc.wait(1)


atexit.register(close)
