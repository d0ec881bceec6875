"""Groups of accounts with the real fake agent and a real broker in this process (issue 21):
a full group sends work elsewhere or refuses naming itself, a shift that ends while a task
runs interrupts it (a clock the test controls) with its work kept and resumable, and a rate
limit on one account of a shared-quota group cools the others."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from baton.core.lifecycle import Completion, TaskState
from baton.runtime import accounts
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Limits, Supervisor, TaskError
from tests.conftest import settle

S = TaskState
SLOW = {
    "steps": [{"say": "starting"}, {"sleep": 8}, {"write": "slow.txt", "content": "slow\n"}],
    "summary": "slow",
}
WRITE = {"steps": [{"write": "fb.txt", "content": "fb\n"}], "summary": "wrote it"}


def configure(repo: Path, tmp_path: Path, group: str, fa: dict[str, object] = SLOW) -> None:
    lines = ['default_worker = "fa"', 'only = ["fa", "fb"]', "[routing.general]",
             'allow = ["fa", "fb"]']  # fmt: skip
    for name, body, model in (("fa", fa, "cheap-1"), ("fb", WRITE, "big-2")):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(body))
        lines += [f"[profiles.{name}]", 'provider = "fake"', f'model = "{model}"',
                  f'options = {{ script = "{path}" }}']  # fmt: skip
    (repo / ".baton.toml").write_text("\n".join(lines) + "\n" + group)


def ask(repo: Path, **kw: object) -> DelegateRequest:
    return DelegateRequest(instruction="Make a change", root=str(repo), kind="general", **kw)  # type: ignore[arg-type]


async def test_a_full_group_sends_work_elsewhere_and_refuses_a_named_worker(
    sup: Supervisor, repo: Path, tmp_path: Path
) -> None:
    configure(repo, tmp_path, '[groups.cheap]\nmodel = "cheap"\nmax = 1\n')
    first = await sup.delegate(ask(repo))
    assert first.worker == "fa"
    second = await sup.delegate(ask(repo))
    assert second.worker == "fb"  # fa's group is full: the next allowed worker takes it
    with pytest.raises(TaskError, match=r"fa: group cheap is full \(1/1 live\)"):
        await sup.delegate(ask(repo, worker="fa"))
    await sup.cancel(first.id)
    assert await settle(sup, first.id) == S.CANCELLED
    third = await sup.delegate(ask(repo, worker="fa"))  # a place again
    assert third.worker == "fa"
    await sup.cancel(third.id)
    await settle(sup, third.id)


async def test_a_shift_that_ends_while_a_task_runs_interrupts_it_and_retry_goes_on(
    sup: Supervisor, repo: Path, tmp_path: Path
) -> None:
    now = datetime.now(UTC)
    start = (now - timedelta(hours=1)).strftime("%H:%M")
    end = (now + timedelta(hours=1)).replace(second=0, microsecond=0)
    configure(
        repo, tmp_path,
        f'[groups.day]\nprovider = "fake"\nfrom = "{start}"\nto = "{end.strftime("%H:%M")}"\n'
        'timezone = "UTC"\ngrace = 60\n',
    )  # fmt: skip
    task = await sup.delegate(ask(repo))
    deadline = time.monotonic() + 30

    async def said() -> bool:  # its first step is done (the fake agent's session is saved)
        return any(e.type == "text" for e in await sup.events(task.id))

    while not await said() and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.1)
    assert (await sup.get(task.id)).state == S.RUNNING
    later = end.timestamp() + 30  # off shift, still within the grace: it goes on
    sup._shifts.clock = lambda: later
    assert await sup._shifts.check() == []
    later = end.timestamp() + 61  # the grace is over
    assert await sup._shifts.check() == [task.id]
    assert await settle(sup, task.id) == S.INTERRUPTED
    done = await sup.get(task.id)
    assert done.completion == Completion.INTERRUPTED
    assert f"group day's shift ended at {end.strftime('%H:%M')} UTC" in done.message
    assert done.worktree and Path(done.worktree).is_dir()  # its work is kept
    sup._shifts.clock = time.time  # the next shift: retry goes on in its session and checkout
    await sup.retry(task.id)
    state = await settle(sup, task.id, timeout=60)
    assert state == S.REVIEW, (await sup.get(task.id)).message


async def test_a_rate_limit_cools_the_whole_shared_quota_group(
    sup: Supervisor, repo: Path, tmp_path: Path
) -> None:
    configure(repo, tmp_path, '[groups.fakes]\nprovider = "fake"\nshared_quota = true\n')
    until = time.time() + 3600
    await sup.store.call(lambda s: accounts.record_cooldown(s, "fa", "fake", until, "rate limited"))
    task = await sup.delegate(ask(repo))
    logs = [str(e.data.get("message")) for e in await sup.events(task.id) if e.type == "log"]
    assert any(m.startswith("waiting: ") and "cooling down until" in m for m in logs), logs
    await asyncio.sleep(2.0)
    assert (await sup.get(task.id)).state == S.QUEUED  # fb shares fa's quota: nobody runs it
    await sup.cancel(task.id)
    alone = '[groups.fakes]\nprovider = "fake"\n'  # without a shared quota, fb takes the next
    configure(repo, tmp_path, alone)
    sup.settings.invalidate()  # as the watcher does, without waiting for it
    other = await sup.delegate(ask(repo))
    assert other.worker == "fb" and await settle(sup, other.id) == S.REVIEW


async def test_two_brokers_routing_at_once_never_both_take_a_groups_last_place(
    sup: Supervisor, baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    """The last place is checked again in the insert's own write transaction, which the
    store takes for one broker at a time: the other one is refused, naming the group."""
    configure(repo, tmp_path, '[groups.cheap]\nmodel = "cheap"\nmax = 1\n')
    other = Supervisor(baton_home, limits=Limits(stall_after=30, kill_grace=1.0))
    await other.start()
    try:
        got = await asyncio.gather(
            sup.delegate(ask(repo, worker="fa")),
            other.delegate(ask(repo, worker="fa")),
            return_exceptions=True,
        )
        made = [t for t in got if not isinstance(t, BaseException)]
        refused = [e for e in got if isinstance(e, BaseException)]
        assert len(made) == 1, got
        assert len(refused) == 1 and isinstance(refused[0], TaskError), got
        assert "group cheap is full (1/1 live)" in str(refused[0])
        owner = sup if made[0] is got[0] else other
        await owner.cancel(made[0].id)
        await settle(owner, made[0].id)
    finally:
        await other.close()
