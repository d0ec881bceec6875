"""Fixtures of the crash suite: a :class:`~tests.crash.harness.Lab` per test."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import baton
from baton.agents.fake_runlog import ENV as RUNLOG
from tests.crash.harness import Lab


@pytest.fixture
async def lab(
    baton_home: Path, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Lab]:
    """A state home, a repository, and a run log every fake agent of the test appends to.

    Brokers in subprocesses and the agents they start import this checkout's ``baton``.
    Whatever the test started is ended afterwards, even when it failed.
    """
    server = str(Path(baton.__file__).resolve().parent.parent)
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", server + (os.pathsep + path if path else ""))
    monkeypatch.delenv("BATON_CRASH_AT", raising=False)
    scratch = tmp_path / "crash-lab"
    scratch.mkdir()
    monkeypatch.setenv(RUNLOG, str(scratch / "runs.jsonl"))
    the_lab = Lab(baton_home, repo, scratch / "runs.jsonl", scratch)
    try:
        yield the_lab
    finally:
        await the_lab.close()
