"""Agent processes as their own floor: start them detached, follow their output, stop them.

- :mod:`baton.process.spawn` — start an attempt detached (through the wrapper), tell whether it
  lives, stop it with everything it started, read how it ended.
- :mod:`baton.process.wrap` — ``python -P -m baton.process.wrap``: the tiny standard-library
  program between the broker and the agent that writes the exit record.
- :mod:`baton.process.spare` — the next attempt's wrapper, started ahead of need and handed
  the attempt (its lock and stdio) when it comes.
- :mod:`baton.process.reaper` — the agent dies with its wrapper, and what it leaves behind
  is ended before the exit record is written.
- :mod:`baton.process.tail` — follow a growing output file line by line, resumable.
- :mod:`baton.process.procfs` — a process's state and create time from Linux's ``/proc``.
- :mod:`baton.process.transport` — one way to start, parse and interrupt an attempt for both
  transports (:class:`Transport`, :class:`NativeTransport`, :class:`Started`).

Both transports (the native stream and ACP) start their processes through this package. The
names below are loaded on first use, so running the wrapper does not import the rest. The
function that starts a process is ``baton.process.spawn.spawn`` (``from baton.process import
spawn`` gives the module, as a submodule's name always wins over a package attribute).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: the wrapper starts here
if TYPE_CHECKING:
    from typing import Any

    from baton.process.spawn import (
        AttemptResult,
        AttemptRunning,
        ExitRecord,
        ProcessRecord,
        agent_env,
        attempt_paths,
        claim_paths,
        ever_started,
        find_attempt,
        is_alive,
        kill_tree,
        read_exit,
        reap,
        resolve_binary,
        run_attempt,
        stderr_tail,
        wait_exit,
    )
    from baton.process.tail import Tailer, TailError
    from baton.process.transport import NativeTransport, Started, Transport

_HOME = {
    "AttemptResult": "spawn",
    "AttemptRunning": "spawn",
    "ExitRecord": "spawn",
    "ProcessRecord": "spawn",
    "agent_env": "spawn",
    "attempt_paths": "spawn",
    "claim_paths": "spawn",
    "ever_started": "spawn",
    "find_attempt": "spawn",
    "is_alive": "spawn",
    "kill_tree": "spawn",
    "read_exit": "spawn",
    "reap": "spawn",
    "resolve_binary": "spawn",
    "run_attempt": "spawn",
    "stderr_tail": "spawn",
    "wait_exit": "spawn",
    "Tailer": "tail",
    "TailError": "tail",
    "NativeTransport": "transport",
    "Started": "transport",
    "Transport": "transport",
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'baton.process' has no attribute {name!r}")
    import importlib  # here: the wrapper, which starts in this package, never needs it

    return getattr(importlib.import_module(f"baton.process.{module}"), name)


__all__ = [
    "AttemptResult",
    "AttemptRunning",
    "ExitRecord",
    "NativeTransport",
    "ProcessRecord",
    "Started",
    "TailError",
    "Tailer",
    "Transport",
    "agent_env",
    "attempt_paths",
    "claim_paths",
    "ever_started",
    "find_attempt",
    "is_alive",
    "kill_tree",
    "read_exit",
    "reap",
    "resolve_binary",
    "run_attempt",
    "stderr_tail",
    "wait_exit",
]
