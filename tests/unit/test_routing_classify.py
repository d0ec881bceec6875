"""The deterministic classifier: instruction, selection size and action → task kind."""

from __future__ import annotations

import pytest

from baton.core.routing import Kind, classify

K = Kind

#: (instruction, kind) for the Delegate action and no selection.
TABLE: list[tuple[str, Kind]] = [
    # mechanical
    ("Rename get_user to fetch_user", K.MECHANICAL),
    ("rename this variable to `count`", K.MECHANICAL),
    ("Fix the typo in the error message", K.MECHANICAL),
    ("Sort the imports", K.MECHANICAL),
    ("Reformat this function", K.MECHANICAL),
    ("Convert these string concatenations to f-strings", K.MECHANICAL),
    ("Add type hints to this function", K.MECHANICAL),
    ("Add docstrings to the public functions", K.MECHANICAL),
    ("Remove unused imports", K.MECHANICAL),
    ("Delete the dead code below", K.MECHANICAL),
    ("Replace print with logging.info", K.MECHANICAL),
    ("Extract a constant for the magic number 86400", K.MECHANICAL),
    ("Use snake_case for these names", K.MECHANICAL),
    ("Bump the version to 1.2.0", K.MECHANICAL),
    ("Update the copyright year in the license header", K.MECHANICAL),
    # context
    ("Rename User to Account everywhere", K.CONTEXT),
    ("Update all callers of parse_config to pass the new flag", K.CONTEXT),
    ("Replace the old logger across the codebase", K.CONTEXT),
    ("Migrate from requests to httpx", K.CONTEXT),
    ("Make error handling consistent throughout the project", K.CONTEXT),
    ("Add the tenant id to every endpoint", K.CONTEXT),
    # build
    ("Fix the build", K.BUILD),
    ("The CI pipeline fails on Windows, fix it", K.BUILD),
    ("Fix the compile error in main.rs", K.BUILD),
    ("Upgrade the dependencies in package.json", K.BUILD),
    ("Make the tests pass", K.BUILD),
    ("Fix the mypy errors in this module", K.BUILD),
    ("Add a Dockerfile for the server", K.BUILD),
    ("Tests are failing after the merge; repair them", K.BUILD),
    # reasoning
    ("Audit this module for concurrency bugs", K.REASONING),
    ("There is a race condition in the cache; fix it", K.REASONING),
    ("Find the deadlock between the writer and the reader", K.REASONING),
    ("Make this queue thread-safe", K.REASONING),
    ("Check this handler for SQL injection and fix it", K.REASONING),
    ("Optimize this loop; it is the bottleneck", K.REASONING),
    ("Design a plugin architecture for the exporters", K.REASONING),
    ("Fix the flaky test in test_sync.py", K.REASONING),
    ("Find the root cause of the memory leak", K.REASONING),
    ("Handle the edge cases of the date parser", K.REASONING),
    # question
    ("What does this function return when the list is empty?", K.QUESTION),
    ("Why is this slow?", K.QUESTION),
    ("How does the retry logic work", K.QUESTION),
    ("Explain the locking in this class", K.QUESTION),
    ("Where is the config loaded?", K.QUESTION),
    ("Is this code reachable?", K.QUESTION),
    ("Summarize what this module does", K.QUESTION),
    ("this handles unicode, right?", K.QUESTION),
    # review
    ("Review this function", K.REVIEW),
    ("Give me a code review of the change", K.REVIEW),
    ("Critique the error handling here", K.REVIEW),
    # general
    ("Add a --verbose flag to the CLI", K.GENERAL),
    ("Implement pagination for the list endpoint", K.GENERAL),
    ("Write a function that parses ISO dates", K.GENERAL),
    ("Can you add a health check route?", K.GENERAL),
    ("Please could you make the button blue", K.GENERAL),
]


@pytest.mark.parametrize(("instruction", "kind"), TABLE, ids=[t[0][:40] for t in TABLE])
def test_classify_table(instruction: str, kind: Kind) -> None:
    got = classify(instruction)
    assert got.kind == kind, f"{instruction!r} → {got.kind} ({got.reason})"
    assert got.reason


def test_table_is_big_enough_and_covers_every_kind() -> None:
    assert len(TABLE) >= 40
    # ``ask`` is only ever named (by ``baton ask``): the classifier never gives it.
    assert {k for _, k in TABLE} == set(Kind) - {Kind.ASK}
    assert all(classify(i).kind != Kind.ASK for i, _ in TABLE)


def test_explain_action_is_a_question_whatever_the_words() -> None:
    got = classify("Rename this", action="explain")
    assert got == classify("anything", action="explain")
    assert got.kind == K.QUESTION and "Explain" in got.reason


def test_large_selection_needs_context() -> None:
    assert classify("Add logging", selection_lines=20).kind == K.GENERAL
    got = classify("Add logging", selection_lines=800)
    assert got.kind == K.CONTEXT and "800 lines" in got.reason
    assert classify("Add logging", files=6).kind == K.CONTEXT
    # Words beat size: a rename of a big selection is still mechanical.
    assert classify("Rename foo to bar", selection_lines=800).kind == K.MECHANICAL


def test_fix_action_without_other_words_is_build() -> None:
    assert classify("Fix these diagnostics", action="fix").kind == K.BUILD
    assert classify("Fix the race condition", action="fix").kind == K.REASONING


def test_long_instruction_with_a_mechanical_word_is_not_mechanical() -> None:
    long = "Rename the handler and then " + "also do more work on the feature " * 6
    assert classify(long).kind == K.GENERAL


def test_deterministic() -> None:
    for instruction, _ in TABLE:
        assert classify(instruction) == classify(instruction)
