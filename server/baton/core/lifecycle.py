"""Task states, completion codes and the one function that moves a task between states."""

from __future__ import annotations

from enum import StrEnum

from baton.errors import WrongState


class TaskState(StrEnum):
    QUEUED = "queued"
    PREPARING = "preparing"
    RUNNING = "running"
    NEEDS_INPUT = "needs_input"
    VERIFYING = "verifying"
    REVIEW = "review"
    APPLIED = "applied"
    REJECTED = "rejected"
    ANSWERED = "answered"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
    RATE_LIMITED = "rate_limited"


class Completion(StrEnum):
    """Why an attempt or a task ended."""

    COMPLETED = "completed"
    RATE_LIMIT = "rate_limit"
    AUTH = "auth"
    BILLING = "billing"
    NETWORK = "network"
    MODEL_UNAVAILABLE = "model_unavailable"
    MAX_TURNS = "max_turns"
    PERMISSION_DENIED = "permission_denied"
    STALLED = "stalled"
    TIMEOUT = "timeout"
    WORKER_ERROR = "worker_error"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
    NO_CHANGES = "no_changes"
    BUDGET = "budget"  # a cap or a daily budget was reached (baton.core.budget)


S = TaskState

#: Every legal move. Anything else is refused by :func:`transition`.
TRANSITIONS: dict[TaskState, frozenset[TaskState]] = {
    S.QUEUED: frozenset({S.PREPARING, S.CANCELLED, S.FAILED, S.INTERRUPTED}),
    S.PREPARING: frozenset({S.RUNNING, S.QUEUED, S.FAILED, S.CANCELLED, S.INTERRUPTED}),
    S.RUNNING: frozenset(
        {
            S.NEEDS_INPUT,
            S.VERIFYING,
            S.REVIEW,
            S.ANSWERED,
            S.FAILED,
            S.CANCELLED,
            S.INTERRUPTED,
            S.RATE_LIMITED,
        }
    ),
    S.NEEDS_INPUT: frozenset({S.RUNNING, S.CANCELLED, S.FAILED, S.INTERRUPTED, S.REVIEW}),
    S.VERIFYING: frozenset({S.REVIEW, S.RUNNING, S.FAILED, S.CANCELLED, S.INTERRUPTED}),
    # A review goes back to running on a reply; a proposal is cancelled when its proposer
    # stops waiting (see baton.runtime.proposals).
    S.REVIEW: frozenset({S.APPLIED, S.REJECTED, S.RUNNING, S.CANCELLED}),
    S.RATE_LIMITED: frozenset({S.QUEUED, S.CANCELLED, S.FAILED}),
    # Settled states that can be resumed or retried go back to the queue; a task whose work
    # landed though its worker never said so goes to review when the user says it is done
    # (baton complete, see baton.runtime.steering).
    S.FAILED: frozenset({S.QUEUED, S.REVIEW}),
    S.CANCELLED: frozenset({S.QUEUED, S.REVIEW}),
    S.INTERRUPTED: frozenset({S.QUEUED, S.CANCELLED, S.REVIEW}),
    S.ANSWERED: frozenset({S.QUEUED}),
    # An applied task is reviewed again when the user undoes an accepted hunk in the
    # editor (see baton.runtime.reopen).
    S.APPLIED: frozenset({S.REVIEW}),
    S.REJECTED: frozenset(),
}

#: States in which no agent process runs and nothing happens without the user.
SETTLED: frozenset[TaskState] = frozenset(
    {S.APPLIED, S.REJECTED, S.ANSWERED, S.FAILED, S.CANCELLED, S.INTERRUPTED}
)

#: States in which the task is waiting on, or working with, an agent.
ACTIVE: frozenset[TaskState] = frozenset({S.QUEUED, S.PREPARING, S.RUNNING, S.VERIFYING})


class IllegalTransition(WrongState, ValueError):
    """A move the lifecycle does not allow."""

    def __init__(self, current: TaskState, target: TaskState) -> None:
        allowed = ", ".join(sorted(TRANSITIONS[current])) or "nothing (final)"
        super().__init__(f"cannot go from {current} to {target}; from {current} only: {allowed}")
        self.current = current
        self.target = target


def transition(current: TaskState, target: TaskState) -> TaskState:
    """Return ``target`` if the lifecycle allows ``current → target``, else raise."""
    if target not in TRANSITIONS[current]:
        raise IllegalTransition(current, target)
    return target


def is_settled(state: TaskState) -> bool:
    return state in SETTLED


#: What a user or agent can sensibly do next, per state (the ``next`` field of task responses).
NEXT_MOVES: dict[TaskState, tuple[str, ...]] = {
    S.QUEUED: ("watch", "cancel"),
    S.PREPARING: ("watch", "cancel"),
    S.RUNNING: ("watch", "steer", "cancel"),
    S.NEEDS_INPUT: ("reply", "cancel"),
    S.VERIFYING: ("watch", "cancel"),
    S.REVIEW: ("diff", "accept", "reject", "reply"),
    S.APPLIED: ("inspect",),
    S.REJECTED: ("inspect",),
    S.ANSWERED: ("inspect", "retry"),
    S.FAILED: ("inspect", "retry"),
    S.CANCELLED: ("inspect", "retry"),
    S.INTERRUPTED: ("retry", "cancel"),
    S.RATE_LIMITED: ("watch", "cancel"),
}
