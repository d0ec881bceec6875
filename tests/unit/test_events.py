from baton.core.events import Event, EventType, describe


def test_describe_gives_a_short_human_step() -> None:
    def d(t: EventType, **data: object) -> str:
        return describe(Event(t, dict(data)))

    assert d(EventType.TOOL, name="Edit", files=["a.py", "b.py"]) == "editing a.py, b.py"
    assert d(EventType.TOOL, name="Bash", files=[]) == "running Bash"
    assert d(EventType.USAGE, input=100, output=20) == "120 tokens"
    assert d(EventType.DIFF, final=False, files=2, hunks=3) == "draft: 2 files, 3 hunks"
    assert d(EventType.TOOL_RESULT, name="edit", ok=False) == "edit failed"
    assert d(EventType.FINAL, text="All done.\nmore") == "finished: All done."
    plan = [
        {"text": "a", "status": "completed"},
        {"text": "write tests", "status": "in_progress"},
        {"text": "c", "status": "pending"},
    ]
    assert d(EventType.PLAN, entries=plan) == "1/3: write tests"
    assert d(EventType.SESSION, id="0123456789abcdef") == "session 0123456789ab"


def test_event_json_round_trip() -> None:
    e = Event(EventType.TEXT, {"text": "hi", "delta": True}, task_id="t1", seq=3, ts=1.5, attempt=2)
    assert Event.from_json(e.to_json()) == e
