"""A bench suite read and refused (``baton.core.bench``), a run judged from what its task
recorded, and a worker's line of the table summed."""

from __future__ import annotations

import pytest

from baton.core.bench import Run, SuiteError, Verdict, parse_suite, read_toml, summarize, verdict

SUITE = """
name = "smoke"
repair_rounds = 1

[[case]]
key = "dates"
title = "parse dates"
instruction = "Fix parse_date"
files = ["dates.py", "app.py:3-9", { path = "b.py", start = 2 }]
scope = ["dates.py"]
checks = [
  ["python3", "-m", "pytest", "-q"],
  { name = "lint", argv = ["ruff", "check"], timeout = 5 },
]

[[case]]
instruction = "Second"
checks = [["true"]]
"""


def test_a_suite_is_read_with_its_defaults() -> None:
    suite = read_toml(SUITE, "file-stem")
    assert suite.name == "smoke" and suite.repair_rounds == 1
    first, second = suite.cases
    assert first.key == "dates" and first.title == "parse dates" and first.scope == ("dates.py",)
    assert first.files == (("dates.py", None, None), ("app.py", 3, 9), ("b.py", 2, 2))
    assert first.checks == (
        {
            "name": "python3 -m pytest -q",
            "argv": ["python3", "-m", "pytest", "-q"],
            "timeout": 300.0,
        },
        {"name": "lint", "argv": ["ruff", "check"], "timeout": 5.0},
    )
    assert second.key == "case-2" and second.title == "" and second.files == ()
    assert read_toml('[[case]]\ninstruction = "x"\n', "stem").name == "stem"
    assert parse_suite(suite.to_json()) == suite  # what a run records reads back the same


def test_every_problem_of_a_suite_is_said_at_once() -> None:
    with pytest.raises(SuiteError) as caught:
        parse_suite(
            {
                "name": "has space",
                "colour": "red",
                "repair_rounds": 9,
                "case": [
                    {"key": "a", "checks": [["true"]]},
                    {"key": "a", "instruction": "x", "checks": "true"},
                    {"key": "b", "instruction": "y", "checks": [["ok", 1]], "files": ["/abs"]},
                    {"key": "c", "instruction": "z", "checks": [{"argv": ["t"], "timeout": 0}]},
                    "not a table",
                ],
            }
        )
    said = str(caught.value)
    for part in (
        "unknown keys ['colour']",
        "name 'has space'",
        "repair_rounds 9",
        "case a: no instruction",
        "case a: checks must be a list of argv lists",
        "case b: check 1: argv must be a non-empty list of strings",
        "case b: file '/abs'",
        "case c: check 1: timeout must be a positive number",
        "case 5: not a table",
    ):
        assert part in said, part
    with pytest.raises(SuiteError, match="no cases"):
        parse_suite({"name": "empty"})
    with pytest.raises(SuiteError, match="not valid TOML"):
        read_toml("[[case]\n", "x")
    with pytest.raises(SuiteError, match="case keys used twice: k"):
        parse_suite({"case": [{"key": "k", "instruction": "x"}, {"key": "k", "instruction": "y"}]})


CHECK_OK = {"name": "tests", "exit_code": 0}


def test_a_run_is_judged_from_its_task() -> None:
    passed = verdict("rejected", "checks passed", {"checks": [CHECK_OK]})
    assert passed == Verdict(True, "checks passed")
    failed = verdict(
        "review",
        "",
        {"checks": [CHECK_OK, {"name": "lint", "exit_code": 1},
                    {"name": "gone", "exit_code": None, "error": "no such file"},
                    {"name": "slow", "exit_code": None, "timed_out": True}]},
    )  # fmt: skip
    assert failed.passed is False and failed.reason == (
        "checks failed: lint failed (exit 1); gone could not start (no such file); slow timed out"
    )
    stopped = verdict("review", "", {"checks": [], "unchecked": ["no checks were run: budget"]})
    assert stopped == Verdict(False, "no checks were run: budget")
    assert verdict("answered", "", None).passed is False
    assert verdict("failed", "the agent crashed", None) == Verdict(
        False, "failed: the agent crashed"
    )
    assert verdict("cancelled", "cancelled by the user", None).passed is None
    assert verdict("running", "", None) == Verdict(None, "running", done=False)
    asked = verdict("cancelled", "", None, note="the worker asked a question: which?")
    assert asked == Verdict(False, "the worker asked a question: which?")


def test_a_workers_line_sums_its_judged_runs() -> None:
    ok, no = Verdict(True, "checks passed"), Verdict(False, "checks failed")
    runs = [
        Run("a", "x", ok, seconds=1.0, tokens=10, cost=0.5),
        Run("a", "y", no, seconds=3.0, tokens=20, cost=None),
        Run("a", "z", ok, seconds=10.0, tokens=5, cost=0.25),
        Run("a", "w", Verdict(None, "cancelled"), seconds=99.0, tokens=1000, cost=9.0),
        Run("a", "v", Verdict(None, "running", done=False)),
        Run("b", "x", no, seconds=2.0, tokens=1),
    ]
    a, b, c = summarize(runs, ["a", "b", "c"])
    assert (a.run, a.passed, a.pending, a.stopped) == (3, 2, 1, 1)
    assert a.median_seconds == 3.0 and a.tokens == 35 and a.cost == 0.75
    assert a.to_json()["rate"] == 0.667
    assert (b.run, b.passed, b.cost, b.to_json()["rate"]) == (1, 0, None, 0.0)
    assert (c.run, c.rate, c.median_seconds) == (0, None, None)
