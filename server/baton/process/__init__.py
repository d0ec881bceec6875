"""Agent processes as their own floor: start them detached, follow their output, stop them.

- :mod:`baton.process.spawn` — start an attempt detached (through the wrapper), tell whether it
  lives, stop it with everything it started, read how it ended.
- :mod:`baton.process.wrap` — ``python -P -m baton.process.wrap``: the tiny standard-library
  program between the broker and the agent that writes the exit record.
- :mod:`baton.process.tail` — follow a growing output file line by line, resumable.

Both transports (the native stream and ACP) start their processes through this package. The
names below are loaded on first use, so running the wrapper does not import the rest. The
function that starts a process is ``baton.process.spawn.spawn`` (``from baton.process import
spawn`` gives the module, as a submodule's name always wins over a package attribute).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baton.process.spawn import (
        AttemptResult,
        ExitRecord,
        ProcessRecord,
        agent_env,
        attempt_paths,
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

_HOME = {
    "AttemptResult": "spawn",
    "ExitRecord": "spawn",
    "ProcessRecord": "spawn",
    "agent_env": "spawn",
    "attempt_paths": "spawn",
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
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'baton.process' has no attribute {name!r}")
    return getattr(importlib.import_module(f"baton.process.{module}"), name)


__all__ = [
    "AttemptResult",
    "ExitRecord",
    "ProcessRecord",
    "TailError",
    "Tailer",
    "agent_env",
    "attempt_paths",
    "is_alive",
    "kill_tree",
    "read_exit",
    "reap",
    "resolve_binary",
    "run_attempt",
    "stderr_tail",
    "wait_exit",
]
