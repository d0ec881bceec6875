"""A planner's graph: found in its answer, and every check it must pass before approval."""

from __future__ import annotations

import json

import pytest

from baton.core.plan import MAX_NODES, brief, parse, problems, scopes_meet

GOOD = [
    {"key": "api", "instruction": "Add the endpoint", "scope": ["server/api/**"]},
    {"key": "ui", "instruction": "Add the button", "scope": ["clients/ui/**"], "worker": "w1"},
    {"key": "docs", "instruction": "Document it", "after": ["api", "ui"]},
]


def test_a_good_plan_passes_and_is_found_plain_or_fenced() -> None:
    assert problems(GOOD, ["w1"]) == []
    text = json.dumps(GOOD)
    assert parse(text) == GOOD
    assert parse(f"Here is the plan:\n```json\n{text}\n```\nDone.") == GOOD
    with pytest.raises(ValueError, match="no JSON list"):
        parse('I could not plan it. {"a": 1}')


def test_each_problem_is_named() -> None:
    assert problems([], []) == ["a plan is a non-empty JSON list of nodes"]
    assert problems([{"key": "x"}] * (MAX_NODES + 1), [])[0].startswith("a plan has at most")
    shape = problems([{"key": "Bad Key", "instruction": "", "after": "a", "x": 1}], [])
    assert shape == [
        "node 1: unknown field 'x'",
        "node 1: key must be a short lower-case name (^[a-z0-9][a-z0-9_-]{0,39}$)",
        "node 1: instruction must be a non-empty string",
        "node 1: after must be a list of strings",
    ]
    twice = [GOOD[0], {**GOOD[0], "scope": ["other/**"]}]
    assert problems(twice, []) == ["key 'api' is used twice"]
    assert problems([{**GOOD[2], "after": ["nope"]}], []) == [
        "docs: comes after unknown node 'nope'"
    ]
    assert problems(GOOD, ["w2"]) == ["ui: worker 'w1' is not allowed here (allowed: w2)"]
    cycle = [
        {"key": "a", "instruction": "x", "after": ["b"]},
        {"key": "b", "instruction": "y", "after": ["a"]},
    ]
    assert problems(cycle, []) == ["the plan has a cycle: a → b → a"]


def test_nodes_that_run_at_once_need_scopes_that_cannot_meet() -> None:
    same = [
        {"key": "a", "instruction": "x", "scope": ["src/**"]},
        {"key": "b", "instruction": "y", "scope": ["src/util/*.py"]},
    ]
    assert problems(same, []) == [
        "a and b may run at once and could write the same files: give them scopes that do"
        " not overlap, or make one come after the other"
    ]
    assert problems([same[0], {**same[1], "after": ["a"]}], []) == []  # one after the other
    anywhere = [{"key": "a", "instruction": "x"}, {"key": "b", "instruction": "y"}]
    assert len(problems(anywhere, [])) == 1  # no scope: anywhere
    assert not scopes_meet(["docs/*.md"], ["src/**"]) and scopes_meet(None, ["src/**"])
    deep = [  # ordered through a middle node: not at once
        {"key": "a", "instruction": "x"},
        {"key": "m", "instruction": "y", "after": ["a"], "scope": ["m/**"]},
        {"key": "z", "instruction": "z", "after": ["m"]},
    ]
    assert problems(deep, []) == []


def test_the_brief_carries_the_goal_the_schema_and_the_workers() -> None:
    text = brief("Add dark mode", ["w1", "w2"])
    assert "Add dark mode" in text and '"maxItems": 20' in text and "w1, w2" in text
    assert "change no file" in text and "ask the user one question" in text
