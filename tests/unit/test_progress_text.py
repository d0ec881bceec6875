"""Progress shows whole sentences of the agent's stream, never word fragments (issue 17),
at a cost per delta of the delta, not of the text kept (issue 18)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Coroutine
from types import SimpleNamespace
from typing import Any

import pytest
from lsprotocol import types

import baton.surfaces.lsp.progress as progress_module
from baton.core.events import Event, EventType
from baton.core.lifecycle import TaskState
from baton.surfaces.lsp.progress import Progress, Run, last_sentence


@pytest.mark.parametrize(
    ("stream", "shown"),
    [
        ("Reading inve", None),  # a delta cut in a word: nothing new to show
        ("Reading inventory.py and t", None),  # a dot inside a name ends nothing
        ("Reading inventory.", None),  # the delta may stop inside the name: wait
        ("Reading inventory.py. Then", "Reading inventory.py."),
        ("I will simplify the loop: tory.py and t", "I will simplify the loop:"),
        ("First. Second sentence here! And thi", "Second sentence here!"),
        ("line one\nline tw", "line one"),
        ("  spaced   out\twords.  ", "spaced out words."),
    ],
)
def test_the_last_complete_sentence_of_the_stream(stream: str, shown: str | None) -> None:
    assert last_sentence(stream) == shown


def test_a_long_sentence_is_cut_at_a_word() -> None:
    sentence = last_sentence("word " * 40 + "end. ")
    assert sentence is not None and len(sentence) <= 80 and sentence.endswith("word…")


class _WorkDone:
    """The server's work-done progress, recording what is reported."""

    def __init__(self) -> None:
        self.tokens: dict[str, object] = {}
        self.reports: list[str] = []

    async def create_async(self, token: str) -> None:
        return None

    def begin(self, token: str, value: object) -> None:
        pass

    def report(self, token: str, value: types.WorkDoneProgressReport) -> None:
        self.reports.append(str(value.message))

    def end(self, token: str, value: object) -> None:
        pass


async def _following(task_id: str = "t1") -> tuple[Progress, Run]:
    """A Progress following one running task, its run created (as the client agreed)."""
    window = SimpleNamespace(work_done_progress=True)
    server = SimpleNamespace(
        work_done_progress=_WorkDone(), client_capabilities=SimpleNamespace(window=window)
    )
    started: list[asyncio.Task[None]] = []

    async def cancel(task_id: str) -> None:
        return None

    def spawn(coro: Coroutine[Any, Any, None], name: str) -> None:
        started.append(asyncio.ensure_future(coro))

    progress = Progress(server, cancel, spawn, lambda: 0.0)  # type: ignore[arg-type]
    progress.follow(task_id, "a task", TaskState.RUNNING)
    await asyncio.gather(*started)
    run = progress.runs[task_id]
    assert run.created
    return progress, run


def _delta(text: str, seq: int, task_id: str = "t1") -> Event:
    return Event(EventType.TEXT, {"text": text, "delta": True}, task_id=task_id, seq=seq)


async def test_streamed_deltas_show_the_sentences_recomputing_would() -> None:
    """Whatever cuts the deltas make, the step after each is the last sentence the whole
    text so far finished (as recomputing it from the kept text every time shows)."""
    text = (
        "Reading inventory.py and the tests. Then I will fix the loop: carefully! "
        "Checking app.py now\nand one more line; done. " * 3
    )
    rng = random.Random(18)
    progress, run = await _following()
    shown: str | None = None
    at, seq = 0, 0
    while at < len(text):
        cut = min(len(text), at + rng.randint(1, 9))
        seq += 1
        progress.on_event(_delta(text[at:cut], seq))
        at = cut
        sentence = last_sentence(text[:at][-4000:])
        shown = sentence if sentence is not None else shown
        assert run.step == (shown or "")
    progress.close()


async def test_a_delta_costs_its_own_length_not_the_kept_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Deltas that finish no sentence are not searched back through the kept text (it
    was searched once per delta: 150 µs an event at 20 streaming tasks), and arm no
    timer of their own: one pause timer per run, moved by the text."""
    searched: list[str] = []

    def counting(text: str) -> str | None:
        searched.append(text)
        return last_sentence(text)

    monkeypatch.setattr(progress_module, "last_sentence", counting)
    progress, run = await _following()
    for seq in range(1, 301):
        progress.on_event(_delta(f"{seq:06d} " + "x" * 40, seq))
        if seq == 1:
            timer = run.quiet
    assert searched == []
    assert run.quiet is timer is not None
    progress.on_event(_delta(" and so it ends. Then", 301))
    assert len(searched) == 1
    assert run.step == last_sentence(run.said) and run.step.endswith("…")  # cut at a word
    progress.close()


async def _shown(run: Run, step: str, within: float = 20.0) -> float:
    """Wait until the run shows ``step``; the loop's time then."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while run.step != step:
        assert loop.time() < deadline, f"still {run.step!r}, not {step!r}"
        await asyncio.sleep(0.01)
    return loop.time()


async def test_a_pause_shows_what_was_said_after_the_last_sentence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Text that stops: a finished sentence shows after the short pause, words with no end
    after the long one, each counted from the last text (text meanwhile defers them)."""
    monkeypatch.setattr(progress_module, "_QUIET", 0.1)
    monkeypatch.setattr(progress_module, "_LONG_QUIET", 0.3)
    loop = asyncio.get_running_loop()
    progress, run = await _following()
    start = loop.time()
    progress.on_event(_delta("First one. Looking at the app module.", 1))
    assert run.step == "First one."  # a dot at the end may be a name's: wait for a pause
    run.text_at += 0.4  # as if more text had come 0.4 s later: the pause counts from it
    shown = await _shown(run, "Looking at the app module.")
    assert shown - start >= 0.5
    start = loop.time()
    progress.on_event(_delta(" Now the words go on and", 2))
    assert run.step == "Looking at the app module."
    shown = await _shown(run, "Now the words go on and")  # no end: after the long pause
    assert shown - start >= 0.3
    progress.close()
