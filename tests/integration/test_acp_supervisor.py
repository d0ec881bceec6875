"""ACP tasks end to end through the Supervisor, with the fake ACP agent (a real process).

Real git worktrees, real SQLite, the real detached runner and control socket: permission
prompts (allow, reject, policy), plans, cancel and steer keeping the session, fs requests
confined to the worktree, the Claude adapter's stale turn, and a broker killed with -9 while a
permission waits.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from baton.config.profiles import Profile, default_profiles
from baton.core.events import EventType
from baton.core.lifecycle import Completion, TaskState
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Limits, Supervisor, TaskError
from tests.support.acp_fake_agent import script

S = TaskState
FAKE = str(Path(__file__).resolve().parents[1] / "support" / "acp_fake_agent.py")
ENDS = {S.REVIEW, S.ANSWERED, S.FAILED, S.CANCELLED, S.INTERRUPTED}


def acp_profile(
    name: str = "acp", provider: str = "fake", plumbing: Path | None = None, **options: Any
) -> Profile:
    # The fake agent's script and prompt log are test plumbing in ``plumbing``: shown to it
    # through its sandbox (which keeps /tmp private).
    sandbox = (
        {"read": [str(plumbing / "turns.json")], "write": [str(plumbing / "prompts.jsonl")]}
        if plumbing
        else {}
    )
    return Profile(
        name=name,
        provider=provider,
        options={
            "transport": "acp",
            "acp_argv": [sys.executable, FAKE],
            "acp_idle_exit": 20,  # tests leave tasks in review: let their runners go soon
            "sandbox": sandbox,
            **options,
        },
    )


@pytest.fixture
async def asup(baton_home: Path, tmp_path: Path) -> AsyncIterator[Supervisor]:
    log = tmp_path / "prompts.jsonl"
    log.touch()  # the sandbox shows only a file that exists
    os.environ["ACP_FAKE_LOG"] = str(log)
    profiles = {
        **default_profiles(),
        "acp": acp_profile(plumbing=tmp_path),
        "acp-claude": acp_profile("acp-claude", "claude", tmp_path),  # the Claude adapter's quirks
    }
    s = Supervisor(baton_home, profiles=profiles, limits=Limits(stall_after=20, kill_grace=1.0))
    await s.start()
    yield s
    await s.close()
    os.environ.pop("ACP_FAKE_LOG", None)
    os.environ.pop("ACP_FAKE_STALE", None)
    os.environ.pop("ACP_FAKE_SCRIPT", None)


async def until(sup: Supervisor, task_id: str, *states: S, timeout: float = 15.0) -> S:
    wanted = set(states) or ENDS
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = await sup.get(task_id)
        if task.state in wanted:
            return task.state
        await asyncio.sleep(0.02)
    task = await sup.get(task_id)
    raise AssertionError(f"task {task_id} still {task.state}: {task.message}")


async def delegate(sup: Supervisor, repo: Path, instruction: str, worker: str = "acp") -> str:
    req = DelegateRequest(instruction=instruction, root=str(repo), worker=worker)
    return (await sup.delegate(req)).id


async def said(sup: Supervisor, task_id: str, timeout: float = 15.0) -> None:
    """Wait until the agent has said something: its turn is under way."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(e.type == EventType.TEXT for e in await sup.events(task_id)):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"task {task_id}: the agent never said anything")


def prompts(tmp_path: Path) -> list[dict[str, str]]:
    path = tmp_path / "prompts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_allow_a_command_then_review_and_accept(
    asup: Supervisor, repo: Path, tmp_path: Path
) -> None:
    steps = script(
        {"plan": [["read", "completed"], ["touch a file", "in_progress"], ["edit", "pending"]]},
        {"run": ["touch", "ran.txt"]},
        {"edit": "app.py", "content": "def a():\n    return 10\n"},
        {"usage": {"used": 900, "size": 1000, "cost": {"amount": 0.5, "currency": "USD"}}},
        {"tokens": [100, 20]},
        {"say": "Done."},
    )
    tid = await delegate(asup, repo, steps)
    assert await until(asup, tid, S.NEEDS_INPUT) == S.NEEDS_INPUT
    task = await asup.get(tid)
    assert task.message == "asks permission: touch ran.txt"
    (perm,) = await asup.permissions(tid)
    assert perm["kind"] == "execute" and perm["preview"] == "touch ran.txt"
    assert [o["kind"] for o in perm["options"]] == ["allow_once", "allow_always", "reject_once"]
    with pytest.raises(TaskError, match="asks permission"):
        await asup.reply(tid, "just do it")
    with pytest.raises(TaskError, match="unknown option 'maybe'"):
        await asup.answer(tid, "maybe")
    answered = await asup.answer(tid, "allow")
    assert answered["option"]["kind"] == "allow_once"
    assert await until(asup, tid) == S.REVIEW
    files, final = await asup.diff(tid)
    assert final and sorted(f.path for f in files) == ["app.py", "ran.txt"]
    task = await asup.get(tid)
    assert task.summary == "Ran touch ran.txt. Done."
    assert task.options["transport"] == "acp"
    assert [e["status"] for e in task.options["plan"]] == ["completed", "in_progress", "pending"]
    assert task.options["usage"] == {
        "input": 100,
        "cached": 0,
        "output": 20,
        "cost": 0.5,
        "cost_source": "reported",
    }
    (attempt,) = await asup.attempts(tid)
    assert attempt.transport == "acp" and attempt.completion == Completion.COMPLETED
    evs = await asup.events(tid)
    states = [e.data["to"] for e in evs if e.type == EventType.STATE]
    assert states[-3:] == ["needs_input", "running", "review"]
    perms = [e.data for e in evs if e.type == EventType.PERMISSION]
    # The edit inside the checkout was allowed by the policy, without asking.
    assert [(p["kind"], p["status"], p.get("by")) for p in perms] == [
        ("execute", "pending", None),
        ("execute", "answered", "user"),
        ("edit", "answered", "policy"),
    ]
    tools = [e.data for e in evs if e.type == EventType.TOOL]
    assert any(t.get("diffs") for t in tools)  # the live preview's diff
    assert await asup.permissions(tid) == []
    await asup.accept(tid)
    assert (repo / "ran.txt").exists() and "return 10" in (repo / "app.py").read_text()
    assert (await asup.get(tid)).state == S.APPLIED


async def test_reject_tells_the_agent_and_the_task_continues(
    asup: Supervisor, repo: Path, tmp_path: Path
) -> None:
    steps = script({"run": ["touch", "no.txt"]}, {"say": "Fine, I did nothing."})
    tid = await delegate(asup, repo, steps)
    await until(asup, tid, S.NEEDS_INPUT)
    await asup.answer(tid, "reject")
    assert await until(asup, tid) == S.ANSWERED
    task = await asup.get(tid)
    assert task.summary == "The user rejected touch no.txt. Fine, I did nothing."
    wt = Path(task.worktree or "")
    assert not (wt / "no.txt").exists()


def turns(tmp_path: Path, *steps: list[dict[str, Any]]) -> None:
    """The fake agent's turns, one per prompt, for prompts that carry no script."""
    path = tmp_path / "turns.json"
    path.write_text(json.dumps(list(steps)))
    os.environ["ACP_FAKE_SCRIPT"] = str(path)


async def test_a_rejection_that_ends_the_turn_is_an_answer_not_a_failure(
    asup: Supervisor, repo: Path
) -> None:
    steps = script(
        {"edit": "kept.txt", "content": "x\n"},
        {"run": ["rm", "-rf", "."], "abort_on_reject": True},
    )
    tid = await delegate(asup, repo, steps)
    await until(asup, tid, S.NEEDS_INPUT)
    await asup.answer(tid, "reject")
    assert await until(asup, tid) == S.REVIEW
    task = await asup.get(tid)
    assert task.summary == "Stopped: the user rejected rm -rf .."
    assert (await asup.attempts(tid))[0].completion == Completion.COMPLETED


async def test_cancel_mid_turn_keeps_the_session_for_a_follow_up(
    asup: Supervisor, repo: Path, tmp_path: Path
) -> None:
    turns(tmp_path, [{"say": "working"}, {"sleep": 30}], [{"say": "carried on"}])
    tid = await delegate(asup, repo, "Work on it.")
    await said(asup, tid)
    t0 = time.monotonic()
    await asup.cancel(tid)
    assert await until(asup, tid) == S.CANCELLED
    assert time.monotonic() - t0 < 3  # the turn stopped; nothing was killed
    first = await asup.get(tid)
    await asup.retry(tid)
    assert await until(asup, tid, S.CANCELLED, S.ANSWERED, S.REVIEW) == S.ANSWERED
    task = await asup.get(tid)
    assert task.summary == "carried on"
    attempts = await asup.attempts(tid)
    assert [a.reason for a in attempts] == ["first", "retry"]
    assert attempts[0].pid == attempts[1].pid  # the same runner...
    assert task.session_id == first.session_id  # ...and the same ACP session
    sessions = [p["session"] for p in prompts(tmp_path)]
    assert len(sessions) == 2 and sessions[0] == sessions[1]


async def test_steer_is_cancel_plus_a_prompt_in_the_same_session(
    asup: Supervisor, repo: Path, tmp_path: Path
) -> None:
    tid = await delegate(asup, repo, script({"say": "thinking"}, {"sleep": 30}))
    await said(asup, tid)
    await asup.steer(tid, script({"edit": "steered.txt", "content": "new direction\n"}))
    assert await until(asup, tid, S.REVIEW, S.FAILED, S.CANCELLED) == S.REVIEW
    attempts = await asup.attempts(tid)
    assert [a.reason for a in attempts] == ["first", "steer"]
    assert attempts[0].completion == Completion.CANCELLED
    assert len({p["session"] for p in prompts(tmp_path)}) == 1


async def test_a_permission_cancelled_with_the_task(asup: Supervisor, repo: Path) -> None:
    tid = await delegate(asup, repo, script({"run": ["touch", "x"]}))
    await until(asup, tid, S.NEEDS_INPUT)
    await asup.cancel(tid)
    assert await until(asup, tid, S.CANCELLED) == S.CANCELLED
    evs = await asup.events(tid)
    assert [e.data["status"] for e in evs if e.type == EventType.PERMISSION] == [
        "pending",
        "cancelled",
    ]
    with pytest.raises(TaskError, match="no permission request is waiting"):
        await asup.answer(tid, "allow")


async def test_fs_write_outside_the_worktree_is_refused(
    asup: Supervisor, repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    steps = script(
        {"fs_write": str(outside), "content": "escaped"},
        {"fs_write": "inside.txt", "content": "through the client\n"},
        {"fs_read": "inside.txt"},
        {"fetch": "https://example.com"},
    )
    tid = await delegate(asup, repo, steps)
    assert await until(asup, tid) == S.REVIEW
    assert not outside.exists()
    task = await asup.get(tid)
    assert "refused: Invalid params" in task.summary
    assert "fs ok through the client" in task.summary
    assert "fetch refused" in task.summary  # network denied by the default policy
    logs = [e.data["message"] for e in await asup.events(tid) if e.type == EventType.LOG]
    assert any("fs/write_text_file refused" in m and str(outside) in m for m in logs)
    files, _ = await asup.diff(tid)
    assert [f.path for f in files] == ["inside.txt"]


async def test_claude_adapter_stale_turn_after_cancel_means_a_new_session(
    asup: Supervisor, repo: Path, tmp_path: Path
) -> None:
    os.environ["ACP_FAKE_STALE"] = "1"
    turns(tmp_path, [{"say": "thinking"}, {"sleep": 30}], [{"say": "carried on"}])
    tid = await delegate(asup, repo, "Work on it.", worker="acp-claude")
    await said(asup, tid)
    await asup.cancel(tid)
    await until(asup, tid, S.CANCELLED)
    old = (await asup.get(tid)).session_id
    await asup.retry(tid)
    assert await until(asup, tid, S.ANSWERED, S.REVIEW, S.FAILED) == S.ANSWERED
    task = await asup.get(tid)
    assert task.session_id and task.session_id != old
    logged = prompts(tmp_path)
    assert logged[-1]["session"] == task.session_id
    assert "continues earlier work on the same task" in logged[-1]["text"]
    assert "Work on it." in logged[-1]["text"]  # the brief was carried over
    assert task.summary == "carried on"
    logs = [e.data["message"] for e in await asup.events(tid) if e.type == EventType.LOG]
    assert any("continuing in a new session" in m for m in logs)


async def test_the_agent_dying_mid_turn_fails_the_task(asup: Supervisor, repo: Path) -> None:
    tid = await delegate(asup, repo, script({"say": "bye"}, {"exit": 3}))
    assert await until(asup, tid) == S.FAILED
    task = await asup.get(tid)
    assert task.completion == Completion.WORKER_ERROR and "ACP agent failed" in task.message


async def test_a_runner_killed_mid_turn_then_retry_loads_the_session(
    asup: Supervisor, repo: Path, tmp_path: Path
) -> None:
    from baton.acp.control import RunnerRecord
    from baton.process import spawn as runner
    from baton.store.paths import task_dir

    turns(tmp_path, [{"say": "working"}, {"sleep": 30}])
    tid = await delegate(asup, repo, "Work on it.")
    await said(asup, tid)
    first = (await asup.get(tid)).session_id
    record = RunnerRecord.load(task_dir(asup.home, tid))
    assert record is not None
    await runner.kill_tree(record.pid, 1.0, record.create_time)
    assert await until(asup, tid) == S.FAILED
    assert "ACP runner" in (await asup.get(tid)).message
    turns(tmp_path, [{"say": "resumed"}])  # the new agent process starts its script afresh
    await asup.retry(tid)
    assert await until(asup, tid) == S.ANSWERED
    task = await asup.get(tid)
    assert task.summary == "resumed" and task.session_id == first  # session/load
    attempts = await asup.attempts(tid)
    assert attempts[0].pid != attempts[1].pid  # a new runner


async def test_a_prompt_error_is_classified(asup: Supervisor, repo: Path) -> None:
    steps = script({"fail": {"code": -32603, "message": "Internal error: 429 Too Many Requests"}})
    tid = await delegate(asup, repo, steps)
    assert await until(asup, tid, S.RATE_LIMITED, S.FAILED) in (S.RATE_LIMITED, S.FAILED)
    assert (await asup.get(tid)).completion == Completion.RATE_LIMIT


BROKER = """
import asyncio, sys
from pathlib import Path
from baton.config.profiles import Profile, default_profiles
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor

async def main():
    home, repo, agent = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    prof = Profile(name="acp", provider="fake",
                   options={"transport": "acp", "acp_argv": [sys.executable, agent],
                            "acp_idle_exit": 20})
    sup = Supervisor(home, profiles={**default_profiles(), "acp": prof})
    await sup.start()
    req = DelegateRequest(instruction=sys.stdin.read(), root=repo, worker="acp")
    task = await sup.delegate(req)
    print(task.id, flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


async def test_broker_killed_while_a_permission_waits_then_a_new_one_finishes(
    baton_home: Path, repo: Path
) -> None:
    steps = script(
        {"edit": "first.txt", "content": "before\n"},
        {"run": ["touch", "ran.txt"]},
        {"edit": "second.txt", "content": "after\n"},
        {"say": "all done"},
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", BROKER, str(baton_home), str(repo), FAKE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write(steps)
    proc.stdin.close()
    tid = proc.stdout.readline().strip()
    try:
        profiles = {**default_profiles(), "acp": acp_profile()}
        deadline = time.monotonic() + 15
        from baton.store import Store

        while time.monotonic() < deadline:
            with Store(baton_home / "baton.db") as store:
                if store.get_task(tid).state == S.NEEDS_INPUT:
                    break
            time.sleep(0.05)
        else:
            raise AssertionError("the first broker never saw the permission request")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    sup = Supervisor(baton_home, profiles=profiles, limits=Limits(stall_after=1.0))
    await sup.start()
    try:
        task = await sup.get(tid)
        assert task.state == S.NEEDS_INPUT and sup.following(tid)  # re-attached to the runner
        await asyncio.sleep(1.5)  # longer than stall_after: waiting on the user is no stall
        assert (await sup.get(tid)).state == S.NEEDS_INPUT
        (perm,) = await sup.permissions(tid)
        assert perm["command"] == "touch ran.txt"
        await sup.answer(tid, "allow")
        assert await until(sup, tid) == S.REVIEW
        files, _ = await sup.diff(tid)
        assert sorted(f.path for f in files) == ["first.txt", "ran.txt", "second.txt"]
        assert (await sup.get(tid)).summary == "Ran touch ran.txt. all done"
    finally:
        await sup.close()
