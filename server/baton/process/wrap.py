"""The process wrapper: ``python -I -S -c <launcher> baton.process.wrap [--lock-fd N]
[--ignore-stop] <exit_path> -- argv…`` (:func:`command`; ``python -P -m baton.process.wrap …``
runs it too; ``--spare``: the same, its arguments sent later, :mod:`baton.process.spare`).

Baton starts this tiny program (detached, as the leader of its own session and process
group) instead of the agent itself. As its first act it claims the attempt: an exclusive
``flock`` on ``attempt-<n>.lock`` beside ``exit_path``, held for the wrapper's whole life
(spawning hands over a lock it already took, as ``--lock-fd``, so the attempt is claimed
from before the process exists). Its pid and create time go to ``attempt-<n>.pid`` (JSON,
atomically) while the agent starts, just after the fork. A broker that lost its memory finds
the attempt's process from those two files (:func:`baton.process.spawn.find_attempt`, which
waits for the pid file of a held lock); a second wrapper for the same attempt refuses to
start its agent (exit code 75, no exit record).

Before the fork it makes itself the subreaper of its descendants and installs its signal
forwarding; it then starts the agent as a child in the same group (bound to the wrapper by
``PR_SET_PDEATHSIG``: a wrapper killed even with SIGKILL takes the agent with it), forwards
SIGTERM/SIGINT/SIGHUP to the group, waits (reaping the orphans that come to it meanwhile),
ends whatever the agent left running — its group, its session and every descendant, ``setsid``
ones included (:mod:`baton.process.reaper`) — and only then writes the exit record ``{"exit":
code, "signal": name | null, "received": name | null, "error": text | null, "ended_at":
epoch}`` atomically (temp file + rename, synced) to ``exit_path``. So an exit record exists
even when the broker that started the agent is long gone, and once it exists nothing the
attempt started still runs.

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

Only the standard library (and Baton's standard-library masking) is used, and on the way to
the agent's ``exec`` only what costs nothing to load (``os``, ``fcntl``, ``_signal``, ``ctypes``
for ``prctl``): no ``subprocess``, ``json``, ``signal`` enums or ``typing``; masking, threads
and the ``json`` module load only when they are needed (tests/integration/test_wrapper_start.py).
The agent starts about 10 ms after the wrapper does.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time

from baton.process.reaper import become_subreaper, die_with, end_leftovers

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see the docstring)
if TYPE_CHECKING:
    import signal as _signal
    from types import FrameType

    from baton.core.masking import StreamMasker
else:  # the C module behind ``signal``, without the enums whose making costs 6 ms a start
    import _signal

_FORWARDED = (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP)
#: Signals Python itself sets to ignored at start-up, restored for the agent (as subprocess
#: does): an agent must die of a broken pipe like any program.
_RESTORED = (_signal.SIGPIPE, _signal.SIGXFSZ)
#: The wrapper's exit code when another process already holds the attempt's claim.
CLAIMED = 75
#: Seconds a claim is retried for: a probe (``find_attempt``) holds the lock for an instant.
CLAIM_RETRY = 1.0
#: Seconds the exit record waits for the output pipes to drain once nothing of the attempt
#: runs (a process outside it that holds a pipe must not keep the record back).
DRAIN_WAIT = 5.0
#: The argument of a spare wrapper (:mod:`baton.process.spare`), and the first field of the
#: orders it is sent; the last field ends them (orders cut short are not run).
SPARE = "--spare"
#: The wrapper's option to start the agent's command with the stop signals ignored (as
#: ``env --ignore-signal`` would): a sandbox that restores them for its agent.
IGNORE_STOP = "--ignore-stop"
ORDERS = b"baton-orders-1"
ORDERS_END = b"end"
#: :data:`baton.core.masking.MASK_ENV`, written out: the masking module (and its imports) is
#: loaded only when the variable is set (tests/unit/test_masking.py checks they agree).
MASK_ENV = "BATON_MASK_ENV"


def command() -> list[str]:
    """How the wrapper is started; its arguments follow.

    ``python -I -S -c <launcher> baton.process.wrap``: no ``site`` (the installed packages'
    path hooks), no ``PYTHON*`` variables, no ``runpy``, so the wrapper starts in a third of
    the time ``python -P -m baton.process.wrap`` takes. The launcher puts the folder holding
    ``baton`` (this one's, an editable install's source folder too) first on the path and
    calls :func:`main` with the arguments after the module's name, which stays on the
    command line as with ``-m`` (how the wrapper is recognised among processes)."""
    folder = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    launcher = (
        f"import sys; sys.path.insert(0, {folder!r}); from baton.process.wrap import main; "
        "sys.exit(main(sys.argv[2:]))"
    )
    return [sys.executable, "-I", "-S", "-c", launcher, "baton.process.wrap"]


class _Forwarder:
    """Passes a termination signal on to every other member of the wrapper's group."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.agent: int | None = None  # the agent's pid while it has not been reaped

    def install(self) -> None:
        for sig in _FORWARDED:
            _signal.signal(sig, self.handle)

    def handle(self, signum: int, _frame: FrameType | None) -> None:
        self.received = signum
        self.forward(signum)

    def forward(self, signum: int) -> None:
        # Ignore the signal while sending it to our own group: an ignored signal is
        # discarded when generated, so the wrapper neither dies nor loops; then restore.
        _signal.signal(signum, _signal.SIG_IGN)
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
        _signal.signal(signum, self.handle)


class _MaskedCopy:
    """Copies one of the agent's output pipes to its file, with every secret masked."""

    def __init__(self, pipe: int, file: int, values: list[str]) -> None:
        import threading

        from baton.core.masking import STRONG, StreamMasker

        self.pipe = pipe
        self.file = file
        self.masker: StreamMasker = StreamMasker(values, hold_from=STRONG)  # never held long
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import codecs

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


def _mask_values() -> list[str]:
    """The secret values to mask in the agent's output (none, importing nothing, when the
    environment names none)."""
    if not os.environ.get(MASK_ENV):
        return []
    from baton.core.masking import values_from_env

    return values_from_env(os.environ)


def _masked_output(values: list[str]) -> tuple[list[int], list[int]]:
    """The write ends of pipes for the agent's stdout and stderr, and their read ends; none
    without secrets (the agent then writes the wrapper's own files)."""
    if not values:
        return [], []
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    return [out_w, err_w], [out_r, err_r]


def write_exit(path: str, record: dict[str, object]) -> None:
    """Write ``record`` as JSON to ``path`` atomically (temp file in the same folder + rename)."""
    _write_json(path, record, durable=True)


def _dumps(record: dict[str, object]) -> str:
    """``record`` as JSON; the json module (and its imports) only for a text or another
    value that is not a number, a bool or None."""
    parts = []
    for key, value in record.items():
        if value is None:
            text = "null"
        elif isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int) or (isinstance(value, float) and value - value == 0):
            text = repr(value)  # a finite float's repr is a JSON number
        else:
            import json

            return json.dumps(record)
        if not key.isidentifier() or not key.isascii():
            import json

            return json.dumps(record)
        parts.append(f'"{key}": {text}')
    return "{" + ", ".join(parts) + "}"


def _write_json(path: str, record: dict[str, object], durable: bool) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        data = _dumps(record).encode("utf-8")
        while data:
            data = data[os.write(fd, data) :]
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
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
    from baton.process.procfs import proc_stat

    found = proc_stat(pid)
    return found.create_time if found is not None else 0.0


def _close_inherited(keep: int) -> None:
    """Close every descriptor above stderr but ``keep`` (what ``close_fds`` does for
    subprocess): the agent gets its stdio and nothing the wrapper was handed."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:  # no /proc: the wrapper's own descriptors all close on exec anyway
        return
    for name in names:
        fd = int(name)
        if fd > 2 and fd != keep:
            try:
                os.close(fd)
            except OSError:
                pass  # the listing's own descriptor, closed already


def _start(
    argv: list[str], out: int | None, err: int | None, ignore: bool = False
) -> tuple[int, str | None]:
    """Fork the agent and ``exec`` it; its pid, and why it could not be started (None when
    it was: the ``exec`` succeeded).

    The child is bound to the wrapper (``PR_SET_PDEATHSIG``, checked against a wrapper that
    died before it was armed), has the wrapper's forwarded signals and the ones Python
    ignores at its start back at their defaults, and its stdout and stderr on ``out`` and
    ``err`` when given. A failed ``exec`` is said back through a pipe closed on exec."""
    bind = die_with(os.getpid())  # ctypes' prctl, loaded before the fork
    report_r, report_w = os.pipe()  # both close on exec (PEP 446)
    pid = os.fork()
    if pid == 0:  # the child: nothing here may return or raise into the wrapper's code
        try:
            for sig in _RESTORED:
                _signal.signal(sig, _signal.SIG_DFL)
            for sig in _FORWARDED:  # ignored: a sandbox that restores them for its agent
                _signal.signal(sig, _signal.SIG_IGN if ignore else _signal.SIG_DFL)
            if bind is not None:
                bind()
            if out is not None and err is not None:
                os.dup2(out, 1)
                os.dup2(err, 2)
            _close_inherited(keep=report_w)
            os.execvp(argv[0], argv)
        except BaseException as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            try:
                os.write(report_w, (why or type(exc).__name__).encode("utf-8", "replace"))
            finally:
                os._exit(127)
    os.close(report_w)
    said = b""
    try:
        while chunk := os.read(report_r, 4096):  # until the exec closes it, or the child ends
            said += chunk
    finally:
        os.close(report_r)
    return pid, said.decode("utf-8", "replace") if said else None


def _orders() -> tuple[list[str], str] | None:
    """A spare wrapper's attempt: its arguments (as :func:`main` takes them) and its working
    folder, read from the socket on the spare's stdin, with the attempt's descriptors — its
    lock (taken already), stdin, stdout, stderr — which become the wrapper's own; None when
    the broker closed the socket without orders, or with orders cut short (nothing runs)."""
    import _socket  # the C module: no enums

    sock = _socket.socket(fileno=0)
    fds: list[int] = []
    chunks: list[bytes] = []
    try:
        data, ancillary, _flags, _address = sock.recvmsg(1 << 16, _socket.CMSG_SPACE(16))
        for level, kind, raw in ancillary:
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                usable = len(raw) - len(raw) % 4
                fds += [int.from_bytes(raw[i : i + 4], sys.byteorder) for i in range(0, usable, 4)]
        while data:
            chunks.append(data)
            data = sock.recv(1 << 16)
    except OSError:
        chunks = []
    finally:
        sock.close()  # descriptor 0: the attempt's stdin takes its place
    fields = b"".join(chunks).split(b"\0")
    try:
        options = _counted(fields, 2)
        argv = _counted(fields, 3 + len(options))
    except ValueError:
        options = argv = []
    if len(fds) != 4 or fields[0] != ORDERS or fields[-1] != ORDERS_END or not argv:
        for fd in fds:
            os.close(fd)
        return None
    lock, *stdio = fds
    for std, fd in enumerate(stdio):
        os.dup2(fd, std)
        os.close(fd)
    os.environ.clear()
    for entry in fields[4 + len(options) + len(argv) : -1]:
        name, _, value = entry.partition(b"=")
        os.environ[os.fsdecode(name)] = os.fsdecode(value)
    decoded = [os.fsdecode(f) for f in (*options, b"--", *argv)]
    return ["--lock-fd", str(lock), *decoded], os.fsdecode(fields[1])


def _counted(fields: list[bytes], at: int) -> list[bytes]:
    """The fields after the count at ``fields[at]``, as many as it says."""
    if at >= len(fields) or not fields[at].isdigit():
        raise ValueError("no count")
    count = int(fields[at])
    if at + 1 + count > len(fields):
        raise ValueError("too few fields")
    return fields[at + 1 : at + 1 + count]


def main(args: list[str]) -> int:
    cwd: str | None = None
    if args == [SPARE]:  # started ahead of need: wait for the attempt to run
        orders = _orders()
        if orders is None:
            return 0
        args, cwd = orders
    lock_fd: int | None = None
    if len(args) >= 2 and args[0] == "--lock-fd" and args[1].isdigit():
        lock_fd, args = int(args[1]), args[2:]
    ignore = bool(args) and args[0] == IGNORE_STOP
    if ignore:
        args = args[1:]
    if len(args) < 3 or args[1] != "--":
        print(
            "usage: python -m baton.process.wrap [--lock-fd N] [--ignore-stop] <exit_path>"
            " -- argv…",
            file=sys.stderr,
        )
        return 2
    exit_path, argv = args[0], args[2:]
    lock_path, pid_path = claim_paths(exit_path)
    claim = take_lock(lock_path, lock_fd)  # held until the wrapper exits
    if claim is None:
        print(f"baton: another process already runs {exit_path!r}'s attempt", file=sys.stderr)
        return CLAIMED
    if cwd is not None:
        try:
            os.chdir(cwd)
        except OSError as exc:
            message = f"baton: cannot start {argv[0]!r} in {cwd!r}: {exc.strerror}"
            print(message, file=sys.stderr, flush=True)
            write_exit(
                exit_path,
                {"exit": 127, "signal": None, "received": None, "error": message,
                 "ended_at": time.time()},
            )  # fmt: skip
            return 127
    _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)  # an inherited SIG_IGN would hide exits
    forwarder = _Forwarder()
    forwarder.install()  # before the child exists, so no signal slips through
    become_subreaper()  # what the agent orphans stays ours to end
    values = _mask_values()
    pipes, reads = _masked_output(values)
    out, err = pipes or (None, None)
    # The agent is started first, the pid file written while it starts: the lock (held
    # since before this process existed when handed over) is the claim; a finder waits
    # for the pid file that names its holder.
    child, failed = _start(argv, out, err, ignore)
    forwarder.agent = child if failed is None else None
    for fd in pipes:
        os.close(fd)  # the agent holds them now
    write_claim(pid_path, os.getpid(), create_time(os.getpid()))
    copies = [_MaskedCopy(r, fd, values) for r, fd in zip(reads, (1, 2))]  # noqa: B905
    for copy in copies:
        copy.thread.start()
    if failed is not None:
        os.waitpid(child, 0)
        for copy in copies:
            copy.thread.join(DRAIN_WAIT)
        message = f"baton: cannot start {argv[0]!r}: {failed}"
        print(message, file=sys.stderr, flush=True)
        write_exit(
            exit_path,
            {"exit": 127, "signal": None, "received": None, "error": message,
             "ended_at": time.time()},
        )  # fmt: skip
        return 127
    if forwarder.received is not None:  # a signal arrived while the child was starting
        forwarder.forward(forwarder.received)
    status = _wait_for(child)
    forwarder.agent = None
    code = os.waitstatus_to_exitcode(status)
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
    import signal

    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
