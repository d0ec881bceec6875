"""Briefs larger than one argv string may be (128 KiB on Linux) reach OpenCode, Gemini and Pi whole.

Per CLI: a task whose selection makes the brief over 200 KiB runs the REAL CLI against the
scripted model server; the first model request must carry the whole brief (head to tail marker,
quotes and spaces untouched), the task reaches review, and nothing leaves 127.0.0.1. Gemini reads
at most 8 MiB of stdin: a brief over that fails the task at once with a message naming the
limit and the size, and no model request is made.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from baton.agents.gemini import STDIN_LIMIT
from baton.core.lifecycle import Completion, TaskState
from baton.core.task import Target
from baton.runtime.requests import DelegateRequest
from tests.e2e.test_worker_opencode_gemini_pi import CLIS, new_text, only_local, settle, supervisor
from tests.support.modelserver import Answer, Script, write_file

pytestmark = [pytest.mark.agents, pytest.mark.slow]

#: The brief must be over this many bytes (well over one argv string's 128 KiB).
BIG = 200 * 1024


def strings(obj: Any) -> Iterator[str]:
    """Every string in a parsed JSON body."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from strings(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from strings(value)


def big_file(repo: Path, name: str, size: int, tail: str) -> int:
    """Commit ``name`` (about ``size`` bytes, quotes and runs of spaces in it, ``tail`` last)."""
    line = 'say("hello,  \\"world\\"")  # é naïve: {"key": [1, 2]}\n'
    lines = [f"{n:06d} {line}" for n in range(size // (len(line.encode()) + 7) + 1)]
    lines.append(f"{tail}\n")
    (repo / name).write_text("".join(lines), encoding="utf-8")
    subprocess.run(["git", "-C", str(repo), "add", name], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "big file"], check=True)
    return len(lines)


@pytest.mark.parametrize("name", list(CLIS))
async def test_a_brief_over_200_kib_reaches_the_model_whole(
    name: str, baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    cli = CLIS[name]
    tail = f"TAIL-MARKER-{name}-end-of-the-selection"
    count = big_file(repo, "big.py", BIG + 10_000, tail)
    script = Script.of(write_file("hello.txt", "hello\n"), Answer("Wrote hello.txt."))
    async with supervisor(cli, baton_home, tmp_path, {"big": script}) as (sup, workers, proxy):
        worker = workers["big"]
        req = DelegateRequest(
            instruction="HEAD-MARKER Create hello.txt with a greeting.",
            root=str(repo),
            targets=[Target("big.py", 1, count)],
            worker=worker.profile.name,
        )
        task = await sup.delegate(req)
        state = await settle(sup, task.id, 90)
        done = await sup.get(task.id)
        assert state == TaskState.REVIEW, done.message
        brief = done.brief
        assert len(brief.encode()) > BIG and tail in brief and '\\"world\\"' in brief
        first = worker.srv.main_requests[0]
        # The whole brief, byte for byte (Pi trims the whitespace around a prompt on stdin).
        assert any(brief.strip() in s for s in strings(first.body)), (
            f"{name}: the model did not get the whole brief ({len(brief)} chars)"
        )
        files, final = await sup.diff(task.id)
        assert final and new_text(files) == "hello\n"
        assert done.summary == "Wrote hello.txt."
        only_local(workers, proxy)


async def test_gemini_refuses_a_brief_over_its_stdin_limit_before_starting(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    cli = CLIS["gemini"]
    count = big_file(repo, "huge.txt", STDIN_LIMIT + 1000, "TAIL")
    script = Script.of(Answer("never"))
    async with supervisor(cli, baton_home, tmp_path, {"huge": script}) as (sup, workers, proxy):
        worker = workers["huge"]
        req = DelegateRequest(
            instruction="Summarize this.",
            root=str(repo),
            targets=[Target("huge.txt", 1, count)],
            worker=worker.profile.name,
        )
        task = await sup.delegate(req)
        assert await settle(sup, task.id, 30) == TaskState.FAILED
        done = await sup.get(task.id)
        size = len(done.brief.encode())
        assert done.completion == Completion.WORKER_ERROR
        assert f"the prompt is {size} bytes" in done.message, done.message
        assert f"at most {STDIN_LIMIT} bytes (8 MiB)" in done.message, done.message
        assert worker.srv.requests == []  # Gemini never started
        only_local(workers, proxy)
