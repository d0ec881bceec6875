"""Adoption: kill -9 the broker in the middle of a task; a new broker finishes it with no gap."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from baton.core.events import EventType
from baton.core.lifecycle import Completion, TaskState
from baton.runtime.supervisor import Supervisor
from baton.store import Store
from tests.conftest import fake_script

BROKER = """
import asyncio, sys
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor
from pathlib import Path

async def main():
    sup = Supervisor(Path(sys.argv[1]))
    await sup.start()
    task = await sup.delegate(DelegateRequest(instruction=sys.stdin.read(), root=sys.argv[2]))
    print(task.id, flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


def start_broker(home: Path, repo: Path, instruction: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", BROKER, str(home), str(repo)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write(instruction)
    proc.stdin.close()
    task_id = proc.stdout.readline().strip()
    assert task_id, "the broker printed no task id"
    return proc, task_id


def wait_for(home: Path, task_id: str, predicate: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with Store(home / "baton.db") as store:
            events = store.events(task_id)
        if any(predicate in json.dumps(e.to_json()) for e in events):
            return
        time.sleep(0.05)
    raise AssertionError(f"never saw {predicate!r}")


async def test_kill_9_the_broker_mid_task_and_a_new_one_finishes_it(
    baton_home: Path, repo: Path
) -> None:
    steps = [
        {"say": "first half", "chunks": 1},
        {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
        {"sleep": 1.5},
        {"say": "second half", "chunks": 1},
        {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
        {"write": "new.txt", "content": "created after adoption\n"},
    ]
    proc, task_id = start_broker(baton_home, repo, fake_script(*steps))
    try:
        wait_for(baton_home, task_id, "first half")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()

    sup = Supervisor(baton_home)
    await sup.start()
    try:
        deadline = time.monotonic() + 20
        while (await sup.get(task_id)).state != TaskState.REVIEW:
            state = (await sup.get(task_id)).state
            assert state not in (TaskState.FAILED, TaskState.INTERRUPTED), state
            assert time.monotonic() < deadline, f"still {state}"
            await asyncio.sleep(0.05)
        events = await sup.events(task_id)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        texts = [e.data.get("text") for e in events if e.type == EventType.TEXT]
        assert texts.count("first half") == 1 and texts.count("second half") == 1
        assert any("adopted" in str(e.data.get("message")) for e in events)
        files, final = await sup.diff(task_id)
        assert final
        by_path = {f.path: f for f in files}
        assert set(by_path) == {"app.py", "new.txt"}
        assert [h.new_text for h in by_path["app.py"].hunks] == [
            "    return 10\n",
            "    return 20\n",
        ]
        result = await sup.accept(task_id)
        assert not result.conflicts
        assert (repo / "new.txt").read_text() == "created after adoption\n"
    finally:
        await sup.close()


async def test_agent_that_vanished_without_exit_record_is_interrupted(
    baton_home: Path, repo: Path
) -> None:
    proc, task_id = start_broker(baton_home, repo, fake_script({"say": "x"}, {"hang": True}))
    try:
        wait_for(baton_home, task_id, '"x"')
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    with Store(baton_home / "baton.db") as store:
        attempt = store.attempts(task_id)[-1]
    assert attempt.pid
    os.killpg(attempt.pid, signal.SIGKILL)  # wrapper and agent die; no exit record is written
    time.sleep(0.2)
    sup = Supervisor(baton_home)
    await sup.start()
    try:
        task = await sup.get(task_id)
        assert task.state == TaskState.INTERRUPTED
        assert task.completion == Completion.INTERRUPTED and "vanished" in task.message
    finally:
        await sup.close()
