"""The fake agent as a real detached process, read through its adapter's parser."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from baton.agents.base import Turn
from baton.agents.fake import FakeAdapter
from baton.config.profiles import Profile
from baton.core.events import Event, EventType
from baton.core.lifecycle import Completion
from baton.core.outcome import Outcome
from baton.process.spawn import AttemptResult, run_attempt

ADAPTER = FakeAdapter()


class Worker:
    """One task's worktree and folder; runs turns of the fake agent in them."""

    def __init__(self, root: Path) -> None:
        self.cwd = root / "work"
        self.task_dir = root / "task"
        self.cwd.mkdir()
        self.attempts = 0

    async def turn(
        self,
        prompt: str,
        session: str | None = None,
        profile: Profile | None = None,
        model: str | None = None,
    ) -> AttemptResult:
        self.attempts += 1
        turn = Turn(
            task_id="t1",
            prompt=prompt,
            cwd=str(self.cwd),
            session_id=session,
            reason="reply" if session else "first",
            task_dir=str(self.task_dir),
            model=model,
        )
        launch = ADAPTER.launch(turn, profile or Profile("fake", "fake"))
        return await asyncio.wait_for(
            run_attempt(launch, ADAPTER.parser(), self.task_dir, self.attempts), 15
        )

    async def run(self, *steps: dict[str, Any], summary: str | None = None) -> AttemptResult:
        return await self.turn(script(*steps, summary=summary))


def script(*steps: dict[str, Any], summary: str | None = None) -> str:
    body: dict[str, Any] = {"steps": list(steps)}
    if summary is not None:
        body["summary"] = summary
    return f"Please do it.\n\n```baton-fake\n{json.dumps(body)}\n```\n"


def of(result: AttemptResult, kind: EventType) -> list[dict[str, Any]]:
    return [e.data for e in result.events if e.type == kind]


def outcome(events: list[Event]) -> Outcome:
    return Outcome.fold(events)


@pytest.fixture
def worker(tmp_path: Path) -> Worker:
    return Worker(tmp_path)


async def test_default_script_answers_with_a_final_text(worker: Worker) -> None:
    result = await worker.turn("Explain this function\nmore detail")
    assert result.exit is not None and result.exit.code == 0
    assert [e.type for e in result.events] == [EventType.SESSION, EventType.TEXT, EventType.FINAL]
    assert of(result, EventType.FINAL) == [{"text": "fake agent: Explain this function"}]
    assert outcome(result.events).completion == Completion.COMPLETED


async def test_say_streams_chunks_and_summary_is_the_final(worker: Worker) -> None:
    result = await worker.run({"say": "abcdefgh", "chunks": 4, "delay": 0.01}, summary="all done")
    assert [d["text"] for d in of(result, EventType.TEXT)] == ["ab", "cd", "ef", "gh"]
    assert all(d["delta"] for d in of(result, EventType.TEXT))
    assert of(result, EventType.FINAL) == [{"text": "all done"}]


async def test_file_steps_change_the_worktree_and_report_tools(worker: Worker) -> None:
    (worker.cwd / "gone.txt").write_text("bye")
    (worker.cwd / "old.txt").write_text("moving")
    result = await worker.run(
        {"write": "pkg/a.py", "content": "x = 1\n"},
        {"edit": "pkg/a.py", "old": "x = 1", "new": "x = 2"},
        {"append": "pkg/a.py", "text": "y = 3\n"},
        {"delete": "gone.txt"},
        {"rename": ["old.txt", "new/place.txt"]},
        {"read": "pkg/a.py"},
    )
    assert (worker.cwd / "pkg/a.py").read_text() == "x = 2\ny = 3\n"
    assert not (worker.cwd / "gone.txt").exists()
    assert (worker.cwd / "new/place.txt").read_text() == "moving"
    tools = of(result, EventType.TOOL)
    assert [(t["name"], t["files"]) for t in tools] == [
        ("write", ["pkg/a.py"]),
        ("edit", ["pkg/a.py"]),
        ("append", ["pkg/a.py"]),
        ("delete", ["gone.txt"]),
        ("rename", ["old.txt", "new/place.txt"]),
        ("read", ["pkg/a.py"]),
    ]
    results = of(result, EventType.TOOL_RESULT)
    assert all(r["ok"] for r in results)
    assert results[-1] == {"name": "read", "ok": True, "output": "x = 2\ny = 3\n"}
    assert outcome(result.events).completion == Completion.COMPLETED


async def test_edit_of_absent_text_fails_clearly(worker: Worker) -> None:
    (worker.cwd / "a.py").write_text("hello\n")
    result = await worker.run({"edit": "a.py", "old": "nope", "new": "x"}, {"say": "never"})
    assert result.exit is not None and result.exit.code == 1
    assert of(result, EventType.TOOL_RESULT)[0]["ok"] is False
    (err,) = of(result, EventType.ERROR)
    assert err["kind"] == "worker_error" and "not in the file" in err["message"]
    assert of(result, EventType.TEXT) == []
    assert (worker.cwd / "a.py").read_text() == "hello\n"


@pytest.mark.parametrize("path", ["../escape.txt", "ABSOLUTE", "sub/../../escape.txt"])
async def test_paths_outside_the_worktree_are_refused(worker: Worker, path: str) -> None:
    outside = worker.cwd.parent / "escape.txt"
    result = await worker.run(
        {"write": str(outside) if path == "ABSOLUTE" else path, "content": "x"}
    )
    (err,) = of(result, EventType.ERROR)
    assert "outside the working folder" in err["message"]
    assert not outside.exists()


async def test_usage_and_sleep(worker: Worker) -> None:
    t0 = time.monotonic()
    result = await worker.run(
        {"sleep": 0.2}, {"usage": {"input": 120, "output": 30, "cost": 0.01}}, {"say": "ok"}
    )
    assert time.monotonic() - t0 >= 0.2
    assert of(result, EventType.USAGE) == [
        {"input": 120, "cached": 0, "output": 30, "cost": 0.01, "cost_source": "reported"}
    ]
    out = outcome(result.events)
    assert (out.input_tokens, out.output_tokens, out.cost) == (120, 30, 0.01)


async def test_ask_ends_the_turn_and_the_reply_resumes_after_it(worker: Worker) -> None:
    first = await worker.run(
        {"say": "thinking"}, {"ask": "Which colour?"}, {"write": "c.txt", "content": "blue"}
    )
    assert first.exit is not None and first.exit.code == 0
    assert of(first, EventType.QUESTION) == [{"text": "Which colour?"}]
    assert of(first, EventType.FINAL) == [] and of(first, EventType.ERROR) == []
    assert not (worker.cwd / "c.txt").exists()
    (session,) = of(first, EventType.SESSION)
    assert outcome(first.events).completion == Completion.COMPLETED

    second = await worker.turn("blue please", session=session["id"])
    assert of(second, EventType.SESSION)[0]["id"] == session["id"]
    texts = [d["text"] for d in of(second, EventType.TEXT)]
    assert texts == ["reply: blue please"]
    assert (worker.cwd / "c.txt").read_text() == "blue"
    assert len(of(second, EventType.FINAL)) == 1

    third = await worker.turn("anything else?", session=session["id"])  # script is used up
    assert of(third, EventType.FINAL) == [{"text": "fake agent: anything else?"}]


async def test_a_resumed_turn_can_bring_a_new_script(worker: Worker) -> None:
    first = await worker.run({"say": "one"})
    sid = of(first, EventType.SESSION)[0]["id"]
    second = await worker.turn(script({"say": "repaired"}, summary="fixed"), session=sid)
    assert [d["text"] for d in of(second, EventType.TEXT)] == ["repaired"]
    assert of(second, EventType.FINAL) == [{"text": "fixed"}]


@pytest.mark.parametrize(
    ("sid", "reason"),
    [("00000000-0000-4000-8000-000000000000", "no fake session"), ("../../etc", "not a fake")],
)
async def test_resuming_an_unknown_session_is_an_error(
    worker: Worker, sid: str, reason: str
) -> None:
    result = await worker.turn("hi", session=sid)
    (err,) = of(result, EventType.ERROR)
    assert reason in err["message"]
    assert result.exit is not None and result.exit.code == 1


async def test_rate_limit_gives_an_absolute_reset_time(worker: Worker) -> None:
    before = time.time()
    result = await worker.run({"rate_limit": {"resets_in": 120}})
    assert result.exit is not None and result.exit.code == 1
    (err,) = of(result, EventType.ERROR)
    assert err["kind"] == "rate_limit"
    assert before + 119 < err["resets_at"] < time.time() + 121
    out = outcome(result.events)
    assert out.completion == Completion.RATE_LIMIT and out.resets_at == err["resets_at"]

    retry = await worker.run({"rate_limit": {"retry_after": 5}})
    (err,) = of(retry, EventType.ERROR)
    assert err["retry_after"] == 5 and err["resets_at"] >= before + 5


async def test_exit_zero_with_an_error_is_still_an_error(worker: Worker) -> None:
    result = await worker.run(
        {"say": "hm"}, {"error": {"kind": "auth", "message": "please log in"}, "exit": 0}
    )
    assert result.exit is not None and result.exit.code == 0
    out = outcome(result.events)
    assert out.completion == Completion.AUTH and out.error_message == "please log in"


async def test_crash_gives_worker_error_through_finish(worker: Worker) -> None:
    result = await worker.run({"say": "partial work"}, {"crash": 3})
    assert result.exit is not None and result.exit.code == 3
    (err,) = of(result, EventType.ERROR)
    assert err["kind"] == "worker_error"
    assert "exit code 3" in err["message"] and "crashing" in err["message"]
    assert result.events[-1].type == EventType.ERROR  # it came from finish, after the stream
    assert outcome(result.events).completion == Completion.WORKER_ERROR


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("{not json", "not JSON"),
        ('{"steps": [{"dance": 1}]}', "needs exactly one of"),
        ('{"steps": [{"say": 3}]}', "wrong value"),
        ('{"steps": [{"say": "x", "loud": true}]}', "unknown fields"),
        ('{"steps": {"say": "x"}}', "a script is an object"),
    ],
)
async def test_a_broken_script_is_a_worker_error_and_exit_2(
    worker: Worker, body: str, reason: str
) -> None:
    result = await worker.turn(f"```baton-fake\n{body}\n```")
    assert result.exit is not None and result.exit.code == 2
    (err,) = of(result, EventType.ERROR)
    assert err["kind"] == "worker_error"
    assert err["message"].startswith("broken fake script:") and reason in err["message"]


async def test_script_from_the_profile_options(worker: Worker, tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": [{"say": "from file"}], "summary": "file"}))
    profile = Profile("fake", "fake", options={"script": str(path)})
    result = await worker.turn("no fence here", profile=profile, model="fake-large")
    assert [d["text"] for d in of(result, EventType.TEXT)] == ["from file"]
    assert of(result, EventType.SESSION)[0]["model"] == "fake-large"


async def test_stream_emits_timestamped_events_at_the_rate(worker: Worker) -> None:
    t0 = time.time()
    result = await worker.run({"stream": 20, "rate": 200, "size": 40})
    texts = [d["text"] for d in of(result, EventType.TEXT)]
    assert len(texts) == 20 and all(len(t) == 40 for t in texts)
    stamps = [float(t.split()[0]) for t in texts]
    assert stamps == sorted(stamps) and stamps[0] >= t0
    assert stamps[-1] - stamps[0] >= 19 / 200 * 0.9


async def test_each_run_appends_a_line_to_the_run_log(
    no_sandbox: None, worker: Worker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unsandboxed: the host's pids (a sandboxed run's are its namespace's, see pid_ns)."""
    log = tmp_path / "runs.jsonl"
    monkeypatch.setenv("BATON_FAKE_RUNLOG", str(log))
    first = await worker.run({"ask": "Which colour?"})
    (session,) = of(first, EventType.SESSION)
    await worker.turn("blue", session=session["id"])
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["resume"] for r in runs] == [None, session["id"]]
    assert [r["attempt"] for r in runs] == [1, 2]
    for r in runs:
        assert r["cwd"] == str(worker.cwd.resolve())
        assert r["task_dir"] == str(worker.task_dir)
        assert r["ppid"] == r["pgid"] != r["pid"]  # the wrapper leads the agent's group
        assert r["exit_path"].endswith(f"attempt-{r['attempt']}.exit")
        assert r["out"].endswith(f"attempt-{r['attempt']}.out")
