"""The process wrapper: ``python -P -m baton.process.wrap [--lock-fd N] <exit_path> -- argv…``.

Baton starts this tiny program (detached, as the leader of its own session and process
group) instead of the agent itself. As its first act it claims the attempt: an exclusive
``flock`` on ``attempt-<n>.lock`` beside ``exit_path``, held for the wrapper's whole life
(spawning hands over a lock it already took, as ``--lock-fd``, so the attempt is claimed
from before the process exists), and its pid and create time written to ``attempt-<n>.pid``
(JSON, atomically). A broker that lost its memory finds the attempt's process from those two
files (:func:`baton.process.spawn.find_attempt`); a second wrapper for the same attempt
refuses to start its agent (exit code 75, no exit record).

It then makes itself the subreaper of its descendants, starts the agent as a child in the
same group (bound to the wrapper by ``PR_SET_PDEATHSIG``: a wrapper killed even with SIGKILL
takes the agent with it), forwards SIGTERM/SIGINT to the group, waits (reaping the orphans
that come to it meanwhile), ends whatever the agent left running — its group, its session and
every descendant, ``setsid`` ones included (:mod:`baton.process.reaper`) — and only then
writes the exit record ``{"exit": code, "signal": name | null, "received": name |
null, "error": text | null, "ended_at": epoch}`` atomically (temp file + rename) to
``exit_path``. So an exit record exists even when the broker that started the agent is long
gone, and once it exists nothing the attempt started still runs.

``exit`` is the agent's exit code, or ``128 + n`` when signal ``n`` killed it (``signal``
then names it); ``127`` when the agent could not be started at all (the reason goes to
stderr and to ``error``). ``received`` names the signal the wrapper itself was sent, if any.

The output files are written masked when the agent was given secrets: ``BATON_MASK_ENV``
(:data:`baton.core.masking.MASK_ENV`) names the variables holding them, whose values the
wrapper reads from the environment it shares with the agent. The agent's stdout and stderr
are then pipes; a thread per pipe writes what comes through it to the file, every secret
masked (:class:`baton.core.masking.StreamMasker`: whole, cut across writes, folded), at
once — only a beginning of a secret is held back until what follows tells — and the exit
record is written after the last byte. Without secrets the agent writes the files itself.

Only the standard library (and Baton's standard-library masking) is used, so the wrapper
starts fast and depends on nothing.
"""

from __future__ import annotations

import codecs
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from types import FrameType

from baton.core.masking import STRONG, StreamMasker, values_from_env
from baton.process.procfs import proc_stat
from baton.process.reaper import become_subreaper, die_with, end_leftovers

_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
#: The wrapper's exit code when another process already holds the attempt's claim.
CLAIMED = 75
#: Seconds a claim is retried for: a probe (``find_attempt``) holds the lock for an instant.
CLAIM_RETRY = 1.0
#: Seconds the exit record waits for the output pipes to drain once nothing of the attempt
#: runs (a process outside it that holds a pipe must not keep the record back).
DRAIN_WAIT = 5.0


class _Forwarder:
    """Passes a termination signal on to every other member of the wrapper's group."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.agent: int | None = None  # the agent's pid while it has not been reaped

    def install(self) -> None:
        for sig in _FORWARDED:
            signal.signal(sig, self.handle)

    def handle(self, signum: int, _frame: FrameType | None) -> None:
        self.received = signum
        self.forward(signum)

    def forward(self, signum: int) -> None:
        # Ignore the signal while sending it to our own group: an ignored signal is
        # discarded when generated, so the wrapper neither dies nor loops; then restore.
        signal.signal(signum, signal.SIG_IGN)
        try:
            os.killpg(os.getpgrp(), signum)
        except OSError:
            pass
        agent = self.agent  # never waited for here: the main loop reaps it
        if agent is not None:
            try:  # the agent may have moved to a group of its own
                if os.getpgid(agent) != os.getpgrp():
                    os.killpg(agent, signum)
            except OSError:
                pass
        signal.signal(signum, self.handle)


class _MaskedCopy:
    """Copies one of the agent's output pipes to its file, with every secret masked."""

    def __init__(self, pipe: int, file: int, values: list[str]) -> None:
        self.pipe = pipe
        self.file = file
        self.masker = StreamMasker(values, hold_from=STRONG)  # a line is never held for long
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")  # bytes round-trip
        try:
            while True:
                data = os.read(self.pipe, 1 << 16)
                if not data:
                    break
                self._write(self.masker.push(decoder.decode(data)))
        except OSError:
            pass
        finally:
            self._write(self.masker.push(decoder.decode(b"", final=True)) + self.masker.flush())
            os.close(self.pipe)

    def _write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8", "surrogateescape"))
        try:
            while data:
                data = data[os.write(self.file, data) :]
        except OSError:
            pass  # a full disk: what cannot be written is dropped, the pipe is still drained


def _masked_output(values: list[str]) -> tuple[list[int], list[_MaskedCopy]]:
    """The write ends of pipes for the agent's stdout and stderr, and their copiers; none
    without secrets (the agent then writes the wrapper's own files)."""
    if not values:
        return [], []
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    return [out_w, err_w], [_MaskedCopy(out_r, 1, values), _MaskedCopy(err_r, 2, values)]


def write_exit(path: str, record: dict[str, object]) -> None:
    """Write ``record`` as JSON to ``path`` atomically (temp file in the same folder + rename)."""
    _write_json(path, record, durable=True)


def _write_json(path: str, record: dict[str, object], durable: bool) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(record, f)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


def claim_paths(exit_path: str) -> tuple[str, str]:
    """The lock and pid file of the attempt whose exit record is ``exit_path``."""
    stem = exit_path[: -len(".exit")] if exit_path.endswith(".exit") else exit_path
    return f"{stem}.lock", f"{stem}.pid"


def take_lock(path: str, fd: int | None = None, within: float = CLAIM_RETRY) -> int | None:
    """Take the exclusive ``flock`` of ``path`` (on ``fd`` when given, an inherited open file
    of it); the descriptor holding it (not inherited by children), or None if another
    process holds it. Retried for ``within`` seconds, since a probe holds it for an instant."""
    if fd is None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    os.set_inheritable(fd, False)
    deadline = time.monotonic() + within
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(0.01)


def write_claim(pid_path: str, pid: int, create_time: float, **extra: object) -> None:
    """Write who holds the attempt's lock (``pid`` created at ``create_time``) atomically.

    Not synced to disk: it only matters while its process lives, which a power loss ends."""
    record = {"pid": pid, "create_time": create_time, "started_at": time.time(), **extra}
    _write_json(pid_path, record, durable=False)


def create_time(pid: int) -> float:
    """When ``pid`` was created, in seconds since the epoch, as psutil reckons it on Linux
    (boot time + start ticks); 0.0 where that cannot be read."""
    found = proc_stat(pid)
    return found.create_time if found is not None else 0.0


def _claim(exit_path: str, lock_fd: int | None) -> int | None:
    lock_path, pid_path = claim_paths(exit_path)
    fd = take_lock(lock_path, lock_fd)
    if fd is not None:
        write_claim(pid_path, os.getpid(), create_time(os.getpid()))
    return fd


def main(args: list[str]) -> int:
    lock_fd: int | None = None
    if len(args) >= 2 and args[0] == "--lock-fd" and args[1].isdigit():
        lock_fd, args = int(args[1]), args[2:]
    if len(args) < 3 or args[1] != "--":
        print(
            "usage: python -m baton.process.wrap [--lock-fd N] <exit_path> -- argv…",
            file=sys.stderr,
        )
        return 2
    exit_path, argv = args[0], args[2:]
    claim = _claim(exit_path, lock_fd)  # held until the wrapper exits
    if claim is None:
        print(f"baton: another process already runs {exit_path!r}'s attempt", file=sys.stderr)
        return CLAIMED
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # an inherited SIG_IGN would hide exits
    forwarder = _Forwarder()
    forwarder.install()  # before the child exists, so no signal slips through
    become_subreaper()  # what the agent orphans stays ours to end
    pipes, copies = _masked_output(values_from_env(os.environ))
    out, err = pipes or (None, None)
    try:
        child = subprocess.Popen(argv, preexec_fn=die_with(os.getpid()), stdout=out, stderr=err)
    except (OSError, subprocess.SubprocessError) as exc:
        for fd in [*pipes, *(c.pipe for c in copies)]:
            os.close(fd)
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        message = f"baton: cannot start {argv[0]!r}: {why}"
        print(message, file=sys.stderr, flush=True)
        write_exit(
            exit_path,
            {"exit": 127, "signal": None, "received": None, "error": message,
             "ended_at": time.time()},
        )  # fmt: skip
        return 127
    for fd in pipes:
        os.close(fd)  # the agent holds them now
    for copy in copies:
        copy.thread.start()
    forwarder.agent = child.pid
    if forwarder.received is not None:  # a signal arrived while the child was starting
        forwarder.forward(forwarder.received)
    status = _wait_for(child.pid)
    forwarder.agent = None
    code = child.returncode = os.waitstatus_to_exitcode(status)
    end_leftovers()  # before the record: a record means nothing of the attempt runs
    for copy in copies:  # and that its output is all in the files
        copy.thread.join(DRAIN_WAIT)
    sig_name: str | None = None
    if code < 0:
        sig_name = _signal_name(-code)
        code = 128 - code
    received = _signal_name(forwarder.received) if forwarder.received is not None else None
    write_exit(
        exit_path,
        {"exit": code, "signal": sig_name, "received": received, "error": None,
         "ended_at": time.time()},
    )  # fmt: skip
    return code if code < 128 else 1


def _wait_for(agent: int) -> int:
    """Wait until the agent exits, reaping the orphans reparented to us meanwhile; its status."""
    while True:
        pid, status = os.waitpid(-1, 0)  # PEP 475: retried across our signal handlers
        if pid == agent:
            return status


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
