"""Crash points: named places where a test can make this process die as if by ``kill -9``.

Each durable step of the engine marks the instants between its intent and its effect with
:func:`crash_point`. A test starts a broker with ``BATON_CRASH_AT=<name>`` (or
``<name>:<n>``: at the n-th time that point is reached, counting from 1) and the broker
SIGKILLs itself there, leaving the state a real crash would. ``BATON_CRASH_AT`` may list
several points separated by commas; the first one reached fires. Unset, a crash point
costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

#: Every crash point the code marks, with what has happened when it fires.
POINTS: dict[str, str] = {
    "before_snapshot": "the task is recorded and preparing; no snapshot yet",
    "after_snapshot": "the task's snapshot is recorded; no worktree yet",
    "pool_taken": "a pool checkout is at the task's place, its record inside; not moved to "
    "the snapshot yet",
    "after_worktree": "the worktree exists and is recorded; no attempt yet",
    "after_attempt_intent": "the attempt is recorded as starting; no process yet",
    "after_spawn": "the agent's wrapper runs; its pid is not recorded yet",
    "after_exit": "the broker read the agent's exit record; the rest of its output is unread",
    "after_attempt_end": "the attempt is recorded as ended; the task is not settled yet",
    "budget_stop": "a budget's stop of a running attempt is recorded (its event); the agent "
    "is not stopped yet",
    "accept_journal": "an accept's journal is written; no user file touched yet",
    "accept_temp": "an accept wrote a temporary file beside a user file; not renamed yet",
    "accept_file": "an accept wrote one more user file (counted per file)",
    "accept_recover_file": "recovering an accept wrote one more user file (counted per file)",
    "accept_marked": "an accept's hunk decisions are stored; its journal is not cleared",
    "reject_marked": "a reject's decisions and the task's end are stored; its worktree remains",
    "reopen_ref": "a reopen restored an applied task's snapshot ref; its decisions are not stored",
    "plan_node": "a plan's approval is recorded as intended and one more of its tasks is "
    "delegated (counted per task); the approval is not recorded as done yet",
    "edit_recorded": "an edit of a queued task is recorded; the task is not started again yet",
}


def _armed() -> dict[str, int]:
    out: dict[str, int] = {}
    for item in os.environ.get("BATON_CRASH_AT", "").split(","):
        name, _, nth = item.strip().partition(":")
        if name:
            out[name] = int(nth) if nth.isdigit() else 1
    return out


_ARMED = _armed()
_SEEN: dict[str, int] = {}


def crash_point(name: str) -> None:
    """Die here (SIGKILL, no clean-up) when ``BATON_CRASH_AT`` names this point."""
    if not _ARMED:
        return
    assert name in POINTS, f"unknown crash point {name!r}"
    want = _ARMED.get(name)
    if want is None:
        return
    _SEEN[name] = _SEEN.get(name, 0) + 1
    if _SEEN[name] == want:
        os.kill(os.getpid(), signal.SIGKILL)
