"""The transcript: a task's events as text, sentences whole, growing only at its end."""

from __future__ import annotations

from typing import Any

import pytest

from baton.core.events import Event, EventType
from baton.core.task import Target, Task
from baton.core.transcript import Transcript, clock, render

TS = 1_700_000_000.0


def task() -> Task:
    return Task(
        id="8kd0m2qh3xz",
        instruction="Make both functions return ten times more",
        root="/repo",
        title="Make both functions return ten times more",
        worker="fake",
        targets=[Target("app.py", 1, 6)],
    )


class Stream:
    """Events numbered as the bus numbers them."""

    def __init__(self) -> None:
        self.seq = 0

    def __call__(self, type: EventType, **data: Any) -> Event:
        self.seq += 1
        return Event(type, dict(data), task_id="8kd0m2qh3xz", seq=self.seq, ts=TS + self.seq)


def say(s: Stream, *deltas: str) -> list[Event]:
    return [s(EventType.TEXT, text=d, delta=True) for d in deltas]


def test_a_whole_run_reads_as_a_transcript() -> None:
    s = Stream()
    events = [
        s(EventType.STATE, **{"from": None, "to": "queued", "reason": "delegated"}),
        s(EventType.STATE, **{"from": "queued", "to": "running", "reason": "fake started"}),
        s(EventType.SESSION, id="abc"),
        *say(s, "Looking at", " app.py. I", " will chan", "ge both fu", "nctions"),
        s(EventType.TOOL, name="read", input="app.py", files=["app.py"]),
        s(EventType.TOOL_RESULT, name="read", ok=True, output="def a(): ..."),
        s(EventType.TOOL, name="Bash", input="pytest -q", files=[]),
        s(EventType.TOOL_RESULT, name="Bash", ok=False, output="1 failed\nmore"),
        *say(s, "Done with a.\n\nNow b."),
        s(EventType.USAGE, input=120, output=30, cached=0, cost=0.0123),
        s(EventType.FINAL, text="Both return more."),
        s(EventType.DIFF, final=True, files=1, hunks=2, added=2, removed=2),
        s(EventType.VERIFY, name="tests", exit=1, seconds=1.25, passed=False, output="E x\nboom"),
        s(EventType.REVIEW, worker="critic", verdict="request_changes", summary="Hm.",
          findings=[{"path": "app.py", "line": 2, "message": "too big"}]),
        s(EventType.STATE, **{"from": "running", "to": "review", "reason": "ready for review"}),
    ]  # fmt: skip
    text = render(task(), events)
    assert text.splitlines() == [
        "# Make both functions return ten times more",
        "",
        "task 8kd0m2qh3xz · fake · delegate",
        "on app.py:1-6",
        "",
        f"{clock(TS + 1)}  **queued** — delegated",
        f"{clock(TS + 2)}  **running** — fake started",
        "",
        "Looking at app.py. I will change both functions",
        "",
        "- read `app.py` ✓",
        "- Bash: `pytest -q` ✗: 1 failed",
        "",
        "Done with a.",
        "",
        "Now b.",
        "",
        "- 120 tokens in, 30 out · $0.0123",
        "- **result:**",
        "",
        "Both return more.",
        "",
        "- final diff: 1 file, 2 hunks (+2 -2)",
        "- check **tests** failed (exit 1, 1.2 s)",
        "  > E x",
        "  > boom",
        "- review by critic: **request changes**",
        "  Hm.",
        "  - app.py:2: too big",
        f"{clock(TS + len(events))}  **review** — ready for review",
    ]


@pytest.mark.parametrize(
    ("deltas", "shown"),
    [
        (["Reading inve"], None),  # cut in a word: nothing yet
        (["Reading inve", "ntory.py and t"], None),  # a dot inside a name ends nothing
        (["Looking at app."], None),  # a dot at a delta's end may be inside a name
        (["Looking at app.", "py. Then"], "Looking at app.py."),
        (["First. Second one! And thi"], "First. Second one!"),
    ],
)
def test_only_whole_sentences_show_while_the_agent_types(
    deltas: list[str], shown: str | None
) -> None:
    s = Stream()
    t = Transcript.of(task(), say(s, *deltas))
    body = t.lines[len(Transcript.of(task()).lines) :]
    assert [line for line in body if line] == ([shown] if shown else [])


def test_the_unfinished_sentence_shows_once_the_agent_does_something_else() -> None:
    s = Stream()
    t = Transcript.of(task(), say(s, "I will change both fu"))
    assert "I will change both fu" not in t.text()
    t.add(s(EventType.TOOL, name="edit", files=["app.py"]))
    assert "I will change both fu\n\n- edit `app.py`\n" in t.text()


def test_a_whole_message_shows_at_once() -> None:
    s = Stream()
    t = Transcript.of(task(), [s(EventType.TEXT, text="No trailing dot", delta=False)])
    assert t.lines[-1] == "No trailing dot"


def test_the_result_is_not_repeated_when_the_agent_said_it() -> None:
    s = Stream()
    events = [
        *say(s, "All done: both return more. "),
        s(EventType.FINAL, text="All done: both return more."),
    ]
    assert "result" not in render(task(), events)


def test_take_gives_the_lines_from_the_first_changed_one() -> None:
    s = Stream()
    t = Transcript.of(task())
    start, lines = t.take() or (None, [])
    assert start == 0 and lines == t.lines
    assert t.take() is None  # nothing changed since
    for e in say(s, "One. Tw"):
        t.add(e)
    start, lines = t.take() or (None, [])
    assert start == len(t.lines) - 2 and lines == ["", "One."]
    for e in say(s, "o. Three"):
        t.add(e)
    # the sentence line is rewritten in place: only it is sent again
    assert t.take() == (len(t.lines) - 1, ["One. Two."])
    t.add(s(EventType.TOOL, name="edit", files=["a.py"]))
    t.add(s(EventType.TOOL_RESULT, name="edit", ok=True))
    assert t.take() == (len(t.lines) - 3, ["One. Two. Three", "", "- edit `a.py` ✓"])


def test_following_by_take_gives_the_same_lines_as_a_fresh_render() -> None:
    """Whatever the cut of the stream, applying every take rebuilds the transcript."""
    s = Stream()
    events = [
        s(EventType.STATE, to="running", reason="fake started"),
        *say(s, "Here we go", ". Reading a", "pp.py now.\nNext", " line. ", "Done"),
        s(EventType.TOOL, name="edit", files=["app.py"]),
        s(EventType.TOOL_RESULT, name="edit", ok=True),
        *say(s, "Wrapping", " up."),
        s(EventType.FINAL, text="ok"),
    ]
    live = Transcript.of(task())
    shown: list[str] = []
    for e in events:
        live.add(e)
        taken = live.take()
        if taken is not None:
            start, lines = taken
            assert start <= len(shown)
            shown[start:] = lines
    assert shown == Transcript.of(task(), events).lines


def test_events_already_folded_are_ignored() -> None:
    s = Stream()
    events = [s(EventType.TOOL, name="edit", files=["a.py"]), s(EventType.USAGE, input=1)]
    t = Transcript.of(task(), events)
    before = list(t.lines)
    for e in events:
        t.add(e)
    assert t.lines == before and t.seq == 2


def test_a_many_line_error_keeps_its_lines_indented_and_bounded() -> None:
    s = Stream()
    trace = "the build broke\nTraceback (most recent call last):\n"
    trace += "  File a.py, line 1\nValueError: no"
    lines = render(task(), [s(EventType.ERROR, kind="tool_error", message=trace)]).splitlines()
    at = lines.index("- **error** (tool_error): the build broke")
    assert lines[at + 1 : at + 4] == [
        "    Traceback (most recent call last):",
        "      File a.py, line 1",
        "    ValueError: no",
    ]
    long = "boom\n" + "\n".join(f"frame {i}" for i in range(100))
    lines = render(task(), [s(EventType.ERROR, kind="worker_error", message=long)]).splitlines()
    assert "    frame 29" in lines and "    frame 30" not in lines
    assert "    … (70 more lines)" in lines
