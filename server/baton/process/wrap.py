"""The process wrapper: ``python -m baton.process.wrap <exit_path> -- argv…``.

Baton starts this tiny program (detached, as the leader of its own session and process
group) instead of the agent itself. It starts the agent as a child in the same group,
forwards SIGTERM/SIGINT to the group, waits, and writes the exit record
``{"exit": code, "signal": name | null, "received": name | null, "error": text | null,
"ended_at": epoch}`` atomically (temp file + rename) to ``exit_path``. So an exit record
exists even when the broker that started the agent is long gone.

``exit`` is the agent's exit code, or ``128 + n`` when signal ``n`` killed it (``signal``
then names it); ``127`` when the agent could not be started at all (the reason goes to
stderr and to ``error``). ``received`` names the signal the wrapper itself was sent, if any.

Only the standard library is used, so the wrapper starts fast and depends on nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from types import FrameType

_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class _Forwarder:
    """Passes a termination signal on to every other member of the wrapper's group."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.child: subprocess.Popen[bytes] | None = None

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
        if self.child is not None and self.child.poll() is None:
            try:  # the child may have moved to a group of its own
                if os.getpgid(self.child.pid) != os.getpgrp():
                    os.killpg(self.child.pid, signum)
            except OSError:
                pass
        signal.signal(signum, self.handle)


def write_exit(path: str, record: dict[str, object]) -> None:
    """Write ``record`` as JSON to ``path`` atomically (temp file in the same folder + rename)."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(record, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main(args: list[str]) -> int:
    if len(args) < 3 or args[1] != "--":
        print("usage: python -m baton.process.wrap <exit_path> -- argv…", file=sys.stderr)
        return 2
    exit_path, argv = args[0], args[2:]
    forwarder = _Forwarder()
    forwarder.install()  # before the child exists, so no signal slips through
    try:
        child = subprocess.Popen(argv)
    except OSError as exc:
        message = f"baton: cannot start {argv[0]!r}: {exc.strerror or exc}"
        print(message, file=sys.stderr, flush=True)
        write_exit(
            exit_path,
            {"exit": 127, "signal": None, "received": None, "error": message,
             "ended_at": time.time()},
        )  # fmt: skip
        return 127
    forwarder.child = child
    if forwarder.received is not None:  # a signal arrived while the child was starting
        forwarder.forward(forwarder.received)
    code = child.wait()  # PEP 475: retried across our signal handlers
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


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
