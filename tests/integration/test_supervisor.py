"""The supervisor end to end: real git, real SQLite, the real fake agent as a detached process."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import psutil
import pytest

from baton.config.profiles import Profile, default_profiles
from baton.core.events import EventType
from baton.core.lifecycle import Completion, TaskState
from baton.core.task import Target
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Limits, Supervisor, TaskError
from baton.store import Store, UnknownTask
from tests.conftest import fake_script, git, settle

S = TaskState
EDIT_TWO = (
    {"say": "working on it", "chunks": 2, "delay": 0.01},
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
)


def delegate(repo: Path, *steps: dict[str, object], **kw: object) -> DelegateRequest:
    return DelegateRequest(instruction=fake_script(*steps), root=str(repo), **kw)  # type: ignore[arg-type]


async def test_delegate_returns_at_once_then_review_and_partial_accept(
    sup: Supervisor, repo: Path
) -> None:
    t0 = time.monotonic()
    task = await sup.delegate(delegate(repo, *EDIT_TWO))
    assert time.monotonic() - t0 < 0.5
    assert task.state == S.QUEUED and task.worktree is None  # worktree comes later
    assert await settle(sup, task.id) == S.REVIEW
    files, final = await sup.diff(task.id)
    assert final and [f.path for f in files] == ["app.py"]
    first, second = files[0].hunks
    # The user's file is untouched until accept.
    assert "return 1\n" in (repo / "app.py").read_text()
    result = await sup.accept(task.id, [first.id])
    assert result.applied == [first.id] and not result.conflicts
    assert (repo / "app.py").read_text() == "def a():\n    return 10\n\n\ndef b():\n    return 2\n"
    assert (await sup.get(task.id)).state == S.REVIEW
    assert await sup.reject(task.id) == [second.id]
    done = await sup.get(task.id)
    assert done.state == S.APPLIED
    assert done.worktree and not Path(done.worktree).exists()
    assert f"baton/{task.id}" not in git(repo, "branch", "--list", "baton/*")
    events = await sup.events(task.id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    states = [e.data["to"] for e in events if e.type == EventType.STATE]
    assert states == ["queued", "preparing", "running", "review", "applied"]
    kinds = {e.type for e in events}
    assert {EventType.SESSION, EventType.TEXT, EventType.TOOL, EventType.DIFF} <= kinds


async def test_reject_everything_cleans_worktree_and_branch(sup: Supervisor, repo: Path) -> None:
    task = await sup.delegate(delegate(repo, *EDIT_TWO))
    assert await settle(sup, task.id) == S.REVIEW
    worktree = Path((await sup.get(task.id)).worktree or "")
    assert worktree.exists()
    assert len(await sup.reject(task.id)) == 2
    assert (await sup.get(task.id)).state == S.REJECTED
    assert not worktree.exists()
    assert git(repo, "branch", "--list", "baton/*").strip() == ""
    assert "return 1" in (repo / "app.py").read_text()


async def test_unsaved_buffer_reaches_the_worker(sup: Supervisor, repo: Path) -> None:
    req = delegate(repo, {"read": "app.py"}, overlays={"app.py": "UNSAVED TEXT\n"})
    task = await sup.delegate(req)
    assert await settle(sup, task.id) == S.ANSWERED
    seen = [e for e in await sup.events(task.id) if e.type == EventType.TOOL_RESULT]
    assert any("UNSAVED TEXT" in str(e.data.get("output")) for e in seen)
    assert (repo / "app.py").read_text().startswith("def a()")


async def test_question_then_reply_resumes_the_session(sup: Supervisor, repo: Path) -> None:
    task = await sup.delegate(
        delegate(
            repo,
            {"ask": "Which value?"},
            {"edit": "app.py", "old": "    return 1\n", "new": "    return 42\n"},
        )
    )
    assert await settle(sup, task.id) == S.NEEDS_INPUT
    asked = await sup.get(task.id)
    assert asked.message == "Which value?"
    with pytest.raises(TaskError, match="reply"):
        await sup.steer(task.id, "nope")
    await sup.reply(task.id, "42 please")
    assert await settle(sup, task.id) == S.REVIEW
    attempts = await sup.attempts(task.id)
    assert [a.reason for a in attempts] == ["first", "reply"]
    assert attempts[0].session_id and attempts[1].session_id == attempts[0].session_id
    texts = " ".join(str(e.data.get("text")) for e in await sup.events(task.id))
    assert "42 please" in texts


async def test_cancel_kills_the_whole_process_tree(
    unsandboxed: None, sup: Supervisor, repo: Path, tmp_path: Path
) -> None:
    """Unsandboxed: the sleeper's pid must be the host's (see tests/integration/test_sandbox.py
    for the same in the sandbox)."""
    pidfile = tmp_path / "sleeper.pid"
    task = await sup.delegate(delegate(repo, {"spawn_sleeper": str(pidfile)}, {"hang": True}))
    deadline = time.monotonic() + 10
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline, "the sleeper never started"
        await asyncio.sleep(0.02)
    sleeper = int(pidfile.read_text())
    assert psutil.pid_exists(sleeper)
    await sup.cancel(task.id)
    assert await settle(sup, task.id) == S.CANCELLED
    assert (await sup.get(task.id)).completion == Completion.CANCELLED
    deadline = time.monotonic() + 5
    while psutil.pid_exists(sleeper) and psutil.Process(sleeper).status() != "zombie":
        assert time.monotonic() < deadline, "the grandchild survived the cancel"
        await asyncio.sleep(0.05)


async def test_idle_watchdog_marks_a_silent_agent_stalled(baton_home: Path, repo: Path) -> None:
    s = Supervisor(baton_home, limits=Limits(stall_after=0.6, kill_grace=0.5))
    await s.start()
    try:
        task = await s.delegate(delegate(repo, {"say": "hi"}, {"hang": True}))
        assert await settle(s, task.id) == S.FAILED
        done = await s.get(task.id)
        assert done.completion == Completion.STALLED and "no output" in done.message
    finally:
        await s.close()


async def test_a_stop_by_baton_records_no_error_from_the_agents_end(
    baton_home: Path, repo: Path
) -> None:
    """A cancel (or the watchdog) kills the agent: the parser's verdict on that end ("exit code
    143 and no end marker") is not the task's story, and editors showed it before "cancelled"."""
    s = Supervisor(baton_home, limits=Limits(stall_after=1.0, kill_grace=0.5))
    await s.start()
    try:
        cancelled = await s.delegate(delegate(repo, {"say": "working"}, {"sleep": 60}))
        deadline = time.monotonic() + 20
        while not [e for e in await s.events(cancelled.id) if e.type == EventType.TEXT]:
            assert time.monotonic() < deadline, "the agent never spoke"
            await asyncio.sleep(0.05)
        await s.cancel(cancelled.id)
        stalled = await s.delegate(delegate(repo, {"say": "hi"}, {"hang": True}))
        assert await settle(s, cancelled.id) == S.CANCELLED
        assert await settle(s, stalled.id) == S.FAILED
        assert (await s.get(stalled.id)).completion == Completion.STALLED
        for task_id in (cancelled.id, stalled.id):
            errors = [e for e in await s.events(task_id) if e.type == EventType.ERROR]
            assert errors == [], errors
    finally:
        await s.close()


@pytest.mark.parametrize(
    ("step", "completion", "words"),
    [
        ({"error": {"kind": "auth", "message": "bad key"}, "exit": 0}, Completion.AUTH, "bad key"),
        ({"crash": 3}, Completion.WORKER_ERROR, "3"),
    ],
)
async def test_failures_are_judged_from_the_stream_not_the_exit_code(
    sup: Supervisor, repo: Path, step: dict[str, object], completion: Completion, words: str
) -> None:
    task = await sup.delegate(delegate(repo, step))
    assert await settle(sup, task.id) == S.FAILED
    done = await sup.get(task.id)
    assert done.completion == completion and words in done.message


async def test_broken_script_fails_clearly(sup: Supervisor, repo: Path) -> None:
    task = await sup.delegate(
        DelegateRequest(instruction="```baton-fake\n{not json\n```", root=str(repo))
    )
    assert await settle(sup, task.id) == S.FAILED
    assert "broken fake script" in (await sup.get(task.id)).message


async def test_rate_limit_holds_then_resumes_after_reset(sup: Supervisor, repo: Path) -> None:
    task = await sup.delegate(delegate(repo, {"rate_limit": {"resets_in": 0.5}}))
    assert await settle(sup, task.id) == S.RATE_LIMITED
    limited = await sup.get(task.id)
    assert limited.completion == Completion.RATE_LIMIT and limited.resets_at
    # After the reset the session resumes; the script has nothing left, so it answers.
    deadline = time.monotonic() + 10
    while (await sup.get(task.id)).state in (S.RATE_LIMITED, S.QUEUED, S.PREPARING, S.RUNNING):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    assert [a.reason for a in await sup.attempts(task.id)] == ["first", "retry"]


async def test_missing_agent_binary_fails_and_broker_keeps_serving(
    baton_home: Path, repo: Path
) -> None:
    profiles = default_profiles()
    profiles["ghost"] = Profile(
        name="ghost", provider="command", options={"argv": ["/nonexistent/agent-cli", "{files}"]}
    )
    s = Supervisor(baton_home, profiles=profiles)
    await s.start()
    try:
        task = await s.delegate(DelegateRequest(instruction="x", root=str(repo), worker="ghost"))
        assert await settle(s, task.id) == S.FAILED
        assert "agent-cli" in (await s.get(task.id)).message
        ok = await s.delegate(delegate(repo, *EDIT_TWO))
        assert await settle(s, ok.id) == S.REVIEW
    finally:
        await s.close()


async def test_unknown_ids_are_clear_errors(sup: Supervisor, repo: Path) -> None:
    with pytest.raises(UnknownTask):
        await sup.get("zzzzzzzz")
    task = await sup.delegate(delegate(repo, *EDIT_TWO))
    assert await settle(sup, task.id) == S.REVIEW
    with pytest.raises(TaskError, match="unknown hunk"):
        await sup.accept(task.id, ["deadbeef00"])
    with pytest.raises(TaskError, match="unknown worker"):
        await sup.delegate(DelegateRequest(instruction="x", root=str(repo), worker="nobody"))


async def test_task_folder_deleted_under_a_running_task(
    sup: Supervisor, repo: Path, baton_home: Path
) -> None:
    import shutil

    task = await sup.delegate(delegate(repo, {"say": "x"}, {"sleep": 30}))
    deadline = time.monotonic() + 10
    while (await sup.get(task.id)).state != S.RUNNING:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.3)
    shutil.rmtree(baton_home / "tasks" / task.id)
    assert await settle(sup, task.id) == S.FAILED
    assert (await sup.get(task.id)).message
    ok = await sup.delegate(delegate(repo, *EDIT_TWO))
    assert await settle(sup, ok.id) == S.REVIEW


async def test_selection_and_target_reach_the_brief(sup: Supervisor, repo: Path) -> None:
    task = await sup.delegate(delegate(repo, {"say": "ok"}, targets=[Target("app.py", 4, 6)]))
    assert await settle(sup, task.id) == S.ANSWERED
    brief = (await sup.get(task.id)).brief
    assert "Selected lines 4-6 of app.py" in brief and "def b():" in brief


async def test_user_edit_during_the_task_merges_on_accept(sup: Supervisor, repo: Path) -> None:
    task = await sup.delegate(delegate(repo, *EDIT_TWO))
    assert await settle(sup, task.id) == S.REVIEW
    # The user edits another line of the same file meanwhile.
    (repo / "app.py").write_text("# mine\ndef a():\n    return 1\n\n\ndef b():\n    return 2\n")
    result = await sup.accept(task.id)
    assert len(result.applied) == 2 and not result.conflicts
    assert (repo / "app.py").read_text() == (
        "# mine\ndef a():\n    return 10\n\n\ndef b():\n    return 20\n"
    )


async def test_conflict_keeps_the_users_text(sup: Supervisor, repo: Path) -> None:
    task = await sup.delegate(delegate(repo, *EDIT_TWO))
    assert await settle(sup, task.id) == S.REVIEW
    mine = "def a():\n    return 'mine'\n\n\ndef b():\n    return 2\n"
    (repo / "app.py").write_text(mine)
    result = await sup.accept(task.id)
    assert len(result.applied) == 1 and len(result.conflicts) == 1
    text = (repo / "app.py").read_text()
    assert "return 'mine'" in text and "return 20" in text
    task_after = await sup.get(task.id)
    assert task_after.state == S.REVIEW  # the conflicting hunk stays pending
    files, _ = await sup.diff(task.id)
    states = sorted(str(h.state) for f in files for h in f.hunks)
    assert states == ["accepted", "pending"]


async def test_concurrency_cap_queues_extra_tasks(baton_home: Path, repo: Path) -> None:
    profiles = default_profiles()
    profiles["fake"].concurrency = 1
    s = Supervisor(baton_home, profiles=profiles)
    await s.start()
    try:
        a = await s.delegate(delegate(repo, {"sleep": 0.8}))
        b = await s.delegate(delegate(repo, {"say": "b"}))
        await asyncio.sleep(0.5)
        assert (await s.get(a.id)).state == S.RUNNING
        assert (await s.get(b.id)).state == S.QUEUED
        assert await settle(s, b.id) == S.ANSWERED
    finally:
        await s.close()


async def test_full_disk_on_the_event_log_fails_the_task_clearly(
    sup: Supervisor, repo: Path
) -> None:
    """A simulated full disk: the task fails with a clear message, nothing crashes, and the
    broker serves again once space is back (the failed state is written then)."""
    task = await sup.delegate(
        delegate(repo, {"say": "hello"}, {"sleep": 0.5}, {"stream": 400, "rate": 400, "size": 900})
    )
    deadline = time.monotonic() + 10
    while (await sup.get(task.id)).state != S.RUNNING:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)

    def fill(store: Store) -> None:
        pages = store.db.execute("PRAGMA page_count").fetchone()[0]
        store.db.execute(f"PRAGMA max_page_count = {pages}")

    # A full disk stops every connection: the writer thread's and the bus's own.
    await sup.store.call(fill)
    assert sup.bus.inline is not None
    fill(sup.bus.inline)
    assert await settle(sup, task.id) == S.FAILED
    failed = await sup.get(task.id)
    assert "full" in failed.message and failed.completion == Completion.WORKER_ERROR
    await sup.store.call(lambda s: s.db.execute("PRAGMA max_page_count = 1073741823"))
    sup.bus.inline.db.execute("PRAGMA max_page_count = 1073741823")
    ok = await sup.delegate(delegate(repo, *EDIT_TWO))
    assert await settle(sup, ok.id) == S.REVIEW
    # The tick wrote the failed state once the store had room again.
    deadline = time.monotonic() + 5
    while True:
        stored = await sup.store.call(lambda s: s.get_task(task.id))
        if stored.state == S.FAILED:
            break
        assert time.monotonic() < deadline, f"stored state still {stored.state}"
        await asyncio.sleep(0.1)


async def test_cancel_while_preparing_or_starting_stops_at_the_next_step(
    sup: Supervisor, repo: Path
) -> None:
    for i in range(400):  # a bigger tree makes preparing last long enough to hit
        (repo / f"f{i}.txt").write_text(f"{i}\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "more")
    task = await sup.delegate(delegate(repo, {"say": "should never run"}))
    deadline = time.monotonic() + 10
    while (await sup.get(task.id)).state == S.QUEUED:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.001)
    assert (await sup.get(task.id)).state == S.PREPARING
    await sup.cancel(task.id)
    assert await settle(sup, task.id) == S.CANCELLED
    await asyncio.sleep(0.3)
    done = await sup.get(task.id)
    assert done.state == S.CANCELLED and done.attempts == 0
    texts = [e for e in await sup.events(task.id) if e.type == EventType.TEXT]
    assert texts == []


async def test_a_session_the_agent_lost_is_started_afresh_once_with_the_brief(
    sup: Supervisor, repo: Path
) -> None:
    """A resume names a session the CLI no longer has (Gemini: "No previous sessions found"):
    the next turn is a new session carrying the brief and the user's reply, not a failure."""
    lost = {"error": {"message": "No previous sessions found", "session_lost": True}}
    task = await sup.delegate(delegate(repo, {"say": "hello"}, {"ask": "which one?"}, lost))
    assert await settle(sup, task.id) == S.NEEDS_INPUT
    await sup.reply(task.id, "the second one")
    deadline = time.monotonic() + 30
    while len(await sup.attempts(task.id)) < 3 or (await sup.get(task.id)).state != S.NEEDS_INPUT:
        assert time.monotonic() < deadline, (await sup.get(task.id)).state
        await asyncio.sleep(0.05)
    attempts = await sup.attempts(task.id)
    assert [a.reason for a in attempts] == ["first", "reply", "resume"]
    assert attempts[2].session_id != attempts[0].session_id  # a new session
    done = await sup.get(task.id)
    assert done.options.get("session_lost") is True
    logs = [
        str(e.data.get("message")) for e in await sup.events(task.id) if e.type == EventType.LOG
    ]
    assert any("starting a new session" in m for m in logs)
