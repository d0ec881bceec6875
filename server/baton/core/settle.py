"""Settling an attempt: from how it ended to what the task does next. Pure: no I/O, no clock.

The turn loop (:mod:`baton.runtime.turns`) starts one attempt, follows it to its end and asks
:func:`settle` what that end means: another turn (a steer), a settled state, a rate limit to
wait out or hand off, a question for the user, or "look at the changes" — and then
:func:`after_changes` says whether the changes go to review, to verification, or are none.
A turn the loop starts next is a :class:`NextTurn` value, never text inside a message.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from baton.core.lifecycle import Completion, TaskState
from baton.core.outcome import Outcome

S = TaskState

#: Why an attempt was started. The automatic ones count against a task's attempt budget;
#: a user's reply or steer does not.
AUTOMATIC = frozenset({"first", "retry", "repair", "handoff", "resume"})
#: Attempts a task may start on its own when the project sets no ``max_attempts``.
DEFAULT_MAX_ATTEMPTS = 6


@dataclass(frozen=True, slots=True)
class NextTurn:
    """A turn to run in the task's session: the prompt and why (see :data:`AUTOMATIC`)."""

    prompt: str
    reason: str  # first | reply | steer | retry | repair | handoff | resume


@dataclass(frozen=True, slots=True)
class Stop:
    """Baton stopped the attempt itself: a cancel, a steer, the watchdog, lost output."""

    completion: Completion
    message: str
    steer: str | None = None  # set for a steer: the guidance the next turn carries


@dataclass(frozen=True, slots=True)
class Continue:
    turn: NextTurn
    fresh: bool = False  # start a new session (the old one is gone)


@dataclass(frozen=True, slots=True)
class Settle:
    state: TaskState
    completion: Completion | None
    message: str


@dataclass(frozen=True, slots=True)
class RateLimited:
    resets_at: float
    message: str


@dataclass(frozen=True, slots=True)
class Ask:
    question: str


@dataclass(frozen=True, slots=True)
class Inspect:
    """The agent finished, or a budget stopped it (``stopped``: why): its changes decide
    (see :func:`after_changes`, :func:`after_budget`)."""

    stopped: str = ""


@dataclass(frozen=True, slots=True)
class Verify:
    """Run the project's checks and the independent review before review."""


Decision = Continue | Settle | RateLimited | Ask | Inspect

#: Where a task goes when Baton stopped its attempt; any other stop is a failure.
_STOPPED = {Completion.CANCELLED: S.CANCELLED, Completion.INTERRUPTED: S.INTERRUPTED}


def settle(
    outcome: Outcome,
    stop: Stop | None,
    *,
    now: float,
    cooldown: float,
    lost_before: bool = False,
) -> Decision:
    """What an ended attempt means. ``stop`` is set when Baton stopped it; ``cooldown`` is
    the wait when a rate limit names no reset time; ``lost_before``: the task already
    started afresh once after losing its session (a second loss fails it)."""
    if stop is not None:
        if stop.steer is not None:
            return Continue(NextTurn(stop.steer, "steer"))
        if stop.completion == Completion.BUDGET:
            return Inspect(stopped=stop.message)
        target = _STOPPED.get(stop.completion, S.FAILED)
        return Settle(target, stop.completion, stop.message)
    if outcome.session_lost and not lost_before:
        # The CLI no longer has the session it was asked to resume: once, a fresh session
        # carries the brief and what was said since (the runtime writes that prompt).
        return Continue(NextTurn("", "resume"), fresh=True)
    if outcome.error == Completion.RATE_LIMIT:
        wait = outcome.retry_after if outcome.retry_after is not None else cooldown
        return RateLimited(outcome.resets_at or now + wait, outcome.error_message)
    if outcome.error is not None:
        return Settle(S.FAILED, outcome.error, outcome.error_message)
    if outcome.question is not None:
        return Ask(outcome.question)
    return Inspect()


def after_changes(changed: bool, *, verify: bool) -> Settle | Verify:
    """An attempt that finished: no changes answer the task; changes go to review, through
    verification when the task has checks or a reviewer."""
    if not changed:
        return Settle(S.ANSWERED, Completion.COMPLETED, "no changes")
    if verify:
        return Verify()
    return Settle(S.REVIEW, Completion.COMPLETED, "ready for review")


def after_budget(changed: bool, message: str) -> Settle:
    """A budget stopped the agent: its changes so far go to review (unchecked), else the
    task fails; either way with completion ``budget``, resumable with a raised cap."""
    if changed:
        return Settle(S.REVIEW, Completion.BUDGET, f"{message}; the work so far is in review")
    return Settle(S.FAILED, Completion.BUDGET, message)


def automatic_attempts(reasons: Iterable[str]) -> int:
    """How many of these attempts the task started on its own."""
    return sum(1 for r in reasons if r in AUTOMATIC)


def out_of_attempts(reasons: Iterable[str], cap: int) -> bool:
    """Whether another automatic attempt would go over ``cap``."""
    return automatic_attempts(reasons) >= max(1, cap)


def gave_up(
    reasons: Iterable[str], last: str, completion: Completion = Completion.RATE_LIMIT
) -> Settle:
    """The task ends here: its automatic attempts are used up (``last``: the latest error)."""
    tried = list(reasons)
    counts: dict[str, int] = {}
    for r in tried:
        counts[r] = counts.get(r, 0) + 1
    what = ", ".join(f"{n} {r}" for r, n in counts.items())
    message = f"gave up after {len(tried)} attempts ({what})"
    return Settle(S.FAILED, completion, f"{message}: {last}" if last else message)


__all__ = [
    "AUTOMATIC",
    "DEFAULT_MAX_ATTEMPTS",
    "Ask",
    "Continue",
    "Decision",
    "Inspect",
    "NextTurn",
    "RateLimited",
    "Settle",
    "Stop",
    "Verify",
    "after_budget",
    "after_changes",
    "automatic_attempts",
    "gave_up",
    "out_of_attempts",
    "settle",
]
