"""The pure settle decision: how an attempt's end decides the task's next step."""

from __future__ import annotations

from baton.core.events import Event, EventType, error
from baton.core.lifecycle import Completion, TaskState
from baton.core.outcome import Outcome
from baton.core.settle import (
    Continue,
    Inspect,
    NextTurn,
    RateLimited,
    Settle,
    Stop,
    gave_up,
    out_of_attempts,
    settle,
)


def test_a_steer_continues_the_session_and_a_cancel_settles() -> None:
    steer = Stop(Completion.CANCELLED, "steer: go left", "go left")
    assert settle(Outcome(), steer, now=0, cooldown=60) == Continue(NextTurn("go left", "steer"))
    cancel = Stop(Completion.CANCELLED, "cancelled by the user")
    assert settle(Outcome(), cancel, now=0, cooldown=60) == Settle(
        TaskState.CANCELLED, Completion.CANCELLED, "cancelled by the user"
    )
    vanished = Stop(Completion.INTERRUPTED, "gone")
    assert settle(Outcome(), vanished, now=0, cooldown=60).state == TaskState.INTERRUPTED  # type: ignore[union-attr]


def test_a_rate_limit_waits_its_reset_or_the_cool_down() -> None:
    told = Outcome.fold([error("rate_limit", "slow down", retry_after=5)])
    assert settle(told, None, now=100, cooldown=60) == RateLimited(105, "slow down")
    silent = Outcome.fold([error("rate_limit", "429")])
    assert settle(silent, None, now=100, cooldown=60) == RateLimited(160, "429")


def test_a_lost_session_starts_afresh_once_then_fails() -> None:
    lost = Outcome.fold([error("worker_error", "No previous sessions found", session_lost=True)])
    first = settle(lost, None, now=0, cooldown=60)
    assert isinstance(first, Continue) and first.fresh and first.turn.reason == "resume"
    again = settle(lost, None, now=0, cooldown=60, lost_before=True)
    assert again == Settle(TaskState.FAILED, Completion.WORKER_ERROR, "No previous sessions found")


def test_an_end_marker_looks_at_the_changes() -> None:
    assert (
        settle(Outcome.fold([Event(EventType.FINAL, {"text": "done"})]), None, now=0, cooldown=60)
        == Inspect()
    )


def test_the_attempt_budget_counts_only_what_the_task_started_itself() -> None:
    reasons = ["first", "reply", "retry", "steer", "retry"]
    assert not out_of_attempts(reasons, 4) and out_of_attempts([*reasons, "handoff"], 4)
    ended = gave_up(["first", "retry", "retry"], "429 again")
    assert ended.state == TaskState.FAILED and ended.completion == Completion.RATE_LIMIT
    assert ended.message == "gave up after 3 attempts (1 first, 2 retry): 429 again"
