"""The broker's identity, its limits, and the error a request gets when it cannot be done.

Light to import (psutil is loaded only where ``/proc`` cannot answer): a headless broker
names itself in its discovery file before it imports the rest of the runtime.
"""

from __future__ import annotations

import dataclasses

from baton.errors import WrongState
from baton.process.procfs import process_id


class TaskError(WrongState):
    """A request that cannot be done in the task's current state (the message says what can)."""


@dataclasses.dataclass
class Limits:
    stall_after: float = 300.0  # no output for this long → stalled
    wall_clock: float = 3600.0  # an attempt may run this long → timeout
    kill_grace: float = 3.0
    draft_debounce: float = 0.2
    poll: float = 0.05


def broker_id() -> str:
    """This broker's id: its process's ``pid:create_time``
    (:func:`baton.process.procfs.process_id`)."""
    return process_id()


def broker_alive(owner: str | None) -> bool:
    """Whether the broker ``owner`` (a :func:`broker_id`) still runs."""
    if not owner:
        return False
    import psutil

    try:
        pid_s, created_s = owner.split(":", 1)
        proc = psutil.Process(int(pid_s))
        same = abs(float(proc.create_time()) - float(created_s)) < 0.01
        return same and proc.status() != psutil.STATUS_ZOMBIE
    except (ValueError, psutil.Error):
        return False
