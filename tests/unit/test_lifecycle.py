from itertools import pairwise, product

import pytest

from baton.core.lifecycle import (
    NEXT_MOVES,
    SETTLED,
    TRANSITIONS,
    IllegalTransition,
    TaskState,
    transition,
)

ALL = list(TaskState)
LEGAL = {(a, b) for a, targets in TRANSITIONS.items() for b in targets}


@pytest.mark.parametrize(("current", "target"), sorted(LEGAL))
def test_legal_transitions_are_applied(current: TaskState, target: TaskState) -> None:
    assert transition(current, target) is target


@pytest.mark.parametrize(("current", "target"), sorted(set(product(ALL, ALL)) - LEGAL))
def test_every_illegal_transition_is_refused(current: TaskState, target: TaskState) -> None:
    with pytest.raises(IllegalTransition) as info:
        transition(current, target)
    assert str(current) in str(info.value) and str(target) in str(info.value)


def test_lifecycle_covers_every_state() -> None:
    assert set(TRANSITIONS) == set(TaskState)
    assert set(NEXT_MOVES) == set(TaskState)


def test_main_path_is_legal() -> None:
    path = ["queued", "preparing", "running", "needs_input", "running", "review", "applied"]
    for a, b in pairwise(path):
        transition(TaskState(a), TaskState(b))


def test_final_states_have_no_way_out() -> None:
    # an applied task only goes back to review (an accepted hunk undone in the editor)
    assert TRANSITIONS[TaskState.APPLIED] == {TaskState.REVIEW}
    assert not TRANSITIONS[TaskState.REJECTED]
    assert TaskState.APPLIED in SETTLED
    assert TaskState.RUNNING not in SETTLED
