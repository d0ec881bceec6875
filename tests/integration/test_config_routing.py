"""Routing from the project's settings, with the real fake agent: handoff, hold, cool-downs, ledger.

Two fake accounts ``fa`` and ``fb`` are defined in the repository's ``.baton.toml``; each has
its own script (a profile's script wins over the instruction), so ``fa`` can be rate limited
while ``fb`` works.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from baton.core.events import EventType
from baton.core.lifecycle import Completion, TaskState
from baton.runtime import accounts
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Limits, Supervisor, TaskError
from tests.conftest import settle

S = TaskState
WRITE = {"steps": [{"write": "hello.txt", "content": "hello\n"}], "summary": "wrote it"}


def script(tmp_path: Path, name: str, body: dict[str, object]) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(body))
    return str(path)


def limited(resets_in: float) -> dict[str, object]:
    """Rate limited first; a resumed session goes on to write the file."""
    return {"steps": [{"rate_limit": {"resets_in": resets_in}}, *WRITE["steps"]]}


ONLY_FAKES = 'only = ["fa", "fb"]'


def configure(
    repo: Path, tmp_path: Path, extra: str = "", fa: dict[str, object] | None = None
) -> None:
    only = ONLY_FAKES  # the built-in "fake" account would be a candidate too
    fa_script = script(tmp_path, "fa", fa or limited(3600))
    fb_script = script(tmp_path, "fb", WRITE)
    (repo / ".baton.toml").write_text(
        f'default_worker = "fa"\n{extra or only}\n'
        f'[profiles.fa]\nprovider = "fake"\noptions = {{ script = "{fa_script}" }}\n'
        f'[profiles.fb]\nprovider = "fake"\noptions = {{ script = "{fb_script}" }}\n'
    )


@pytest.fixture
async def broker(
    baton_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Supervisor]:
    monkeypatch.setenv("BATON_CONFIG", str(tmp_path / "no-user-config.toml"))
    s = Supervisor(baton_home, limits=Limits(stall_after=30, kill_grace=1.0))
    await s.start()
    yield s
    await s.close()


async def test_rate_limited_account_hands_off_to_the_next_one(
    broker: Supervisor, repo: Path, tmp_path: Path
) -> None:
    configure(repo, tmp_path)
    task = await broker.delegate(DelegateRequest("Create hello.txt", root=str(repo)))
    assert task.worker == "fa"
    await until(broker, task.id, S.REVIEW)
    done = await broker.get(task.id)
    assert done.id == task.id and done.worker == "fb" and done.completion == Completion.COMPLETED
    attempts = await broker.attempts(task.id)
    assert [(a.reason, a.worker, a.completion) for a in attempts] == [
        ("first", "fa", Completion.RATE_LIMIT),
        ("handoff", "fb", Completion.COMPLETED),
    ]
    assert attempts[1].session_id != attempts[0].session_id
    assert "rate limited: fa →" in done.route_reason
    # The history stays with the task: the rate limit, then the handoff.
    states = [e.data["to"] for e in await broker.events(task.id) if e.type == EventType.STATE]
    assert states[:4] == ["queued", "preparing", "running", "rate_limited"]
    assert "queued" in states[4:] and states[-1] == "review"
    files, _ = await broker.diff(task.id)
    assert [f.path for f in files] == ["hello.txt"]

    # The cool-down is in the store, for every broker: a new task skips fa at once.
    cooling = await broker.store.call(accounts.cooldowns)
    assert cooling["fa"].until > time.time() + 3000 and cooling["fa"].task_id == task.id
    second = await broker.delegate(DelegateRequest("Create hello.txt again", root=str(repo)))
    assert second.worker == "fb" and "passed over fa (cooling down until" in second.route_reason
    assert await settle(broker, second.id) == S.REVIEW
    assert [a.worker for a in await broker.attempts(second.id)] == ["fb"]


async def test_only_the_limited_account_allowed_holds_then_runs_after_the_reset(
    broker: Supervisor, repo: Path, tmp_path: Path
) -> None:
    configure(repo, tmp_path, 'only = ["fa"]', fa=limited(1.0))
    task = await broker.delegate(DelegateRequest("Create hello.txt", root=str(repo)))
    assert await settle(broker, task.id) == S.RATE_LIMITED
    held = await broker.get(task.id)
    assert held.worker == "fa" and held.resets_at and held.resets_at > time.time()
    await until(broker, task.id, S.REVIEW)
    attempts = await broker.attempts(task.id)
    assert [(a.reason, a.worker) for a in attempts] == [("first", "fa"), ("retry", "fa")]
    assert attempts[1].started_at >= held.resets_at - 0.05


async def test_hold_policy_and_an_explicit_worker_are_not_handed_off(
    broker: Supervisor, repo: Path, tmp_path: Path
) -> None:
    configure(repo, tmp_path, f'on_rate_limit = "hold"\n{ONLY_FAKES}')
    task = await broker.delegate(DelegateRequest("Create hello.txt", root=str(repo)))
    assert await settle(broker, task.id) == S.RATE_LIMITED
    assert (await broker.get(task.id)).worker == "fa"
    await broker.cancel(task.id)

    configure(repo, tmp_path)  # handoff again, but the request names fa
    await _changed(broker, repo)
    await broker.store.call(accounts.clear_cooldown, "fa")
    named = await broker.delegate(DelegateRequest("Create hello.txt", root=str(repo), worker="fa"))
    assert named.route_reason == "named by the request"
    assert await settle(broker, named.id) == S.RATE_LIMITED
    assert (await broker.get(named.id)).worker == "fa"
    await broker.cancel(named.id)


async def test_user_hands_a_failed_task_to_another_worker(
    broker: Supervisor, repo: Path, tmp_path: Path
) -> None:
    fails = {"steps": [{"error": {"kind": "worker_error", "message": "boom"}}]}
    configure(repo, tmp_path, fa=fails)
    task = await broker.delegate(DelegateRequest("Create hello.txt", root=str(repo)))
    assert await settle(broker, task.id) == S.FAILED
    with pytest.raises(TaskError, match="unknown worker 'ghost'"):
        await broker.handoff(task.id, "ghost")
    await broker.handoff(task.id, "fb")
    await until(broker, task.id, S.REVIEW)
    assert [(a.reason, a.worker) for a in await broker.attempts(task.id)] == [
        ("first", "fa"),
        ("handoff", "fb"),
    ]
    with pytest.raises(TaskError, match="handoff is for failed"):
        await broker.handoff(task.id)


async def test_ledger_records_outcomes_and_baton_stats_shows_them(
    broker: Supervisor, repo: Path, tmp_path: Path, baton_home: Path
) -> None:
    configure(repo, tmp_path, fa=WRITE)
    task = await broker.delegate(DelegateRequest("Rename foo to bar", root=str(repo)))
    assert task.kind == "mechanical" and "'rename'" in task.route_reason
    assert await settle(broker, task.id) == S.REVIEW
    await broker.accept(task.id)
    rows = await broker.store.call(accounts.stats)
    assert [(r.worker, r.kind, r.tasks, r.ok, r.hunks_accepted, r.hunks_decided) for r in rows] == [
        ("fa", "mechanical", 1, 1, 1, 1)
    ]
    env = {**os.environ, "BATON_HOME": str(baton_home)}
    out = subprocess.run(
        [sys.executable, "-m", "baton.cli", "stats", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    doc = json.loads(out.stdout)
    assert doc["stats"][0]["worker"] == "fa" and doc["stats"][0]["acceptedShare"] == 1.0
    evidence = await broker.store.call(accounts.evidence)
    assert evidence[("fa", None, "mechanical")].ok == 1


async def test_a_broken_project_file_refuses_delegate_naming_file_and_line(
    broker: Supervisor, repo: Path
) -> None:
    (repo / ".baton.toml").write_text('default_worker = "fake"\nonly = [\n')
    with pytest.raises(TaskError, match=r"\.baton\.toml:\d+: not valid TOML"):
        await broker.delegate(DelegateRequest("x", root=str(repo)))


async def until(sup: Supervisor, task_id: str, state: TaskState, timeout: float = 15) -> None:
    """Wait for ``state`` (settle() stops at rate_limited, which a handoff passes through)."""
    deadline = time.monotonic() + timeout
    while (task := await sup.get(task_id)).state != state:
        if time.monotonic() > deadline or task.state in (S.ANSWERED, S.FAILED):
            events = [(e.attempt, e.type, e.data) for e in await sup.events(task_id)]
            raise AssertionError(f"{task.state}: {task.message}; events {events}")
        await asyncio.sleep(0.02)


async def _changed(sup: Supervisor, repo: Path) -> None:
    """Drop the cached settings of ``repo`` (the watcher does it too; don't wait for it)."""
    sup.settings.invalidate(repo / ".baton.toml")


@pytest.mark.parametrize("kind", ["billing", "model_unavailable", "auth"])
async def test_billing_and_model_errors_are_not_rate_limits(
    broker: Supervisor, repo: Path, tmp_path: Path, kind: str
) -> None:
    fails = {"steps": [{"error": {"kind": kind, "message": f"mock {kind}"}}]}
    configure(repo, tmp_path, fa=fails)
    task = await broker.delegate(DelegateRequest("Create hello.txt", root=str(repo)))
    assert await settle(broker, task.id) == S.FAILED
    done = await broker.get(task.id)
    assert done.worker == "fa" and done.completion == Completion(kind)
    assert await broker.store.call(accounts.cooldowns) == {}
    assert [a.worker for a in await broker.attempts(task.id)] == ["fa"]
