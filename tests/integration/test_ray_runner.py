"""Attempts on a real Ray cluster of three nodes on this host (loopback only), fake agents.

One cluster for the module (:mod:`tests.support.ray_cluster`: a head with no agent
resources, node A with ``alpha``, node B with ``beta``, both with ``fake = 2``); each test a
broker of its own. Skipped when the ``ray`` extra is not installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from baton.core.events import EventType
from baton.core.lifecycle import Completion, TaskState
from baton.process import ray_runner
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Limits, Supervisor
from tests.conftest import fake_script, settle, user_config
from tests.support.ray_cluster import Nodes, three_nodes

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def nodes() -> Iterator[Nodes]:
    with three_nodes() as cluster:
        yield cluster


def profiles(nodes: Nodes, extra: str = "") -> str:
    lines = []
    for name, wants in (
        ("on-a", "{alpha = 1}"),
        ("on-b", "{beta = 1}"),
        ("anywhere", "{fake = 1}"),
    ):
        lines.append(
            f'[profiles.{name}]\nprovider = "fake"\nrunner = "ray"\n'
            f'ray_address = "{nodes.address}"\nray_resources = {wants}\n'
        )
    return extra + "\n".join(lines)


@pytest.fixture
def config(nodes: Nodes, baton_home: Path, tmp_path: Path) -> Path:
    return user_config(tmp_path, 'sandbox = "off"\n' + profiles(nodes))


async def broker(home: Path) -> Supervisor:
    sup = Supervisor(home, limits=Limits(stall_after=60, kill_grace=1.0))
    await sup.start()
    return sup


def remote_state(home: Path, task_id: str, attempt: int) -> dict[str, Any]:
    return ray_runner.read_state(home / "tasks" / task_id, attempt)


async def wait_until(what: str, check: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        await asyncio.sleep(0.05)
    raise AssertionError(f"never: {what}")


async def node_of(home: Path, task_id: str, attempt: int = 1) -> str:
    state = await wait_until(
        "the relay names its node", lambda: remote_state(home, task_id, attempt).get("node")
    )
    return str(state["node_id"])


async def test_routed_by_resources_streamed_in_order_reviewed_and_accepted_here(
    nodes: Nodes, config: Path, baton_home: Path, repo: Path
) -> None:
    sup = await broker(baton_home)
    try:
        steps = [{"say": f"line {i}", "chunks": 1} for i in range(30)]
        steps.append({"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"})
        steps.append({"write": "remote.txt", "content": "written on a node\n"})
        ids = {}
        for worker in ("on-a", "on-b"):
            req = DelegateRequest(instruction=fake_script(*steps), root=str(repo), worker=worker)
            ids[worker] = (await sup.delegate(req)).id
        for worker, task_id in ids.items():
            assert await settle(sup, task_id, timeout=90) == TaskState.REVIEW, worker
        assert await node_of(baton_home, ids["on-a"]) == nodes.a.node_id
        assert await node_of(baton_home, ids["on-b"]) == nodes.b.node_id
        for task_id in ids.values():
            events = await sup.events(task_id)
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            texts = [e.data.get("text") for e in events if e.type == EventType.TEXT]
            assert [t for t in texts if t and t.startswith("line ")] == [
                f"line {i}" for i in range(30)
            ]
            assert any("Ray cluster" in str(e.data.get("message")) for e in events)
        files, final = await sup.diff(ids["on-a"])
        assert final and {f.path for f in files} == {"app.py", "remote.txt"}
        assert not (repo / "remote.txt").exists()  # nothing changes before the accept
        result = await sup.accept(ids["on-a"])
        assert not result.conflicts
        assert (repo / "remote.txt").read_text() == "written on a node\n"
        assert "return 10" in (repo / "app.py").read_text()
        assert (await sup.get(ids["on-a"])).state == TaskState.APPLIED
    finally:
        await sup.close()


async def test_cancel_kills_the_remote_process_tree(
    nodes: Nodes, config: Path, baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "sleeper.pid"
    script = fake_script(
        {"say": "up", "chunks": 1}, {"spawn_sleeper": str(pidfile)}, {"hang": True}
    )
    sup = await broker(baton_home)
    try:
        req = DelegateRequest(instruction=script, root=str(repo), worker="on-b")
        task_id = (await sup.delegate(req)).id
        await wait_until("the sleeper runs", pidfile.exists)
        sleeper = psutil.Process(int(pidfile.read_text()))
        assert await node_of(baton_home, task_id) == nodes.b.node_id
        began = time.monotonic()
        await sup.cancel(task_id)
        assert await settle(sup, task_id) == TaskState.CANCELLED
        await wait_until("the remote sleeper is gone", lambda: not _alive(sleeper), 15)
        took = time.monotonic() - began
        assert took < 15, took
    finally:
        await sup.close()


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


BROKER = """
import asyncio, sys
from pathlib import Path
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor

async def main():
    sup = Supervisor(Path(sys.argv[1]))
    await sup.start()
    req = DelegateRequest(instruction=sys.stdin.read(), root=sys.argv[2], worker=sys.argv[3])
    print((await sup.delegate(req)).id, flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


async def test_a_broker_restarted_mid_run_reattaches_to_the_remote_run(
    nodes: Nodes, config: Path, baton_home: Path, repo: Path
) -> None:
    steps = [
        {"say": "before the restart", "chunks": 1},
        {"sleep": 3},
        {"say": "after the restart", "chunks": 1},
        {"write": "late.txt", "content": "after\n"},
    ]
    proc = subprocess.Popen(
        [sys.executable, "-c", BROKER, str(baton_home), str(repo), "on-a"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdin and proc.stdout
    proc.stdin.write(fake_script(*steps))
    proc.stdin.close()
    task_id = proc.stdout.readline().strip()
    try:
        await node_of(baton_home, task_id)
        out = baton_home / "tasks" / task_id / "attempt-1.out"
        await wait_until("the first line", lambda: out.exists() and b"before" in out.read_bytes())
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    sup = await broker(baton_home)
    try:
        assert await settle(sup, task_id, timeout=90) == TaskState.REVIEW
        events = await sup.events(task_id)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        texts = [e.data.get("text") for e in events if e.type == EventType.TEXT]
        assert texts.count("before the restart") == 1 and texts.count("after the restart") == 1
        files, _ = await sup.diff(task_id)
        assert {f.path for f in files} == {"late.txt"}
        assert len(await sup.attempts(task_id)) == 1  # followed, not started again
    finally:
        await sup.close()


async def test_a_relay_started_again_reattaches_to_the_actor_by_name(
    nodes: Nodes, config: Path, baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    """The relay (the attempt's local end) is killed while the agent runs on its node; a
    relay started again for that attempt finds the actor by name in the store's namespace,
    gets the whole stream from line 0 and the result, and the agent ran once."""
    steps = [{"say": f"n{i}", "chunks": 1} for i in range(5)] + [{"sleep": 3}]
    steps += [{"say": "last", "chunks": 1}, {"write": "again.txt", "content": "x\n"}]
    sup = await broker(baton_home)
    try:
        req = DelegateRequest(instruction=fake_script(*steps), root=str(repo), worker="on-a")
        task_id = (await sup.delegate(req)).id
        await node_of(baton_home, task_id)
        folder = baton_home / "tasks" / task_id
        out = folder / "attempt-1.out"
        await wait_until("n4 is out", lambda: out.exists() and b"n4" in out.read_bytes())
        (attempt,) = await sup.attempts(task_id)
        assert attempt.pid
        (relay_proc,) = psutil.Process(attempt.pid).children()
        relay_proc.kill()  # the relay alone: the actor and its agent go on
        spec = json.loads(ray_runner.spec_path(folder, 1).read_text())
        again = tmp_path / "again"
        again.mkdir()
        (again / "spec.json").write_text(json.dumps({**spec, "state": str(again / "state")}))
        relay = subprocess.run(
            [sys.executable, "-m", "baton.process.ray_relay", str(again / "spec.json")],
            capture_output=True, timeout=90,
        )  # fmt: skip
        assert relay.returncode == 0, relay.stderr.decode()[-2000:]
        state = json.loads((again / "state").read_text())
        assert state.get("reattached") and state.get("ended"), state
        said = relay.stdout.decode()
        assert said.startswith(out.read_text())  # what the first relay had, from line 0
        for word in ("n0", "n4", "last"):
            assert said.count(f'"{word}"') == 1, word  # the agent ran once
        worktree = (await sup.get(task_id)).worktree
        assert worktree and (Path(worktree) / "again.txt").read_text() == "x\n"
    finally:
        await sup.close()


async def test_a_node_lost_mid_run_interrupts_and_the_task_resumes_on_another(
    nodes: Nodes, config: Path, baton_home: Path, repo: Path
) -> None:
    steps = [{"say": "working", "chunks": 1}, {"sleep": 4}, {"write": "done.txt", "content": "y\n"}]
    sup = await broker(baton_home)
    try:
        req = DelegateRequest(instruction=fake_script(*steps), root=str(repo), worker="anywhere")
        task_id = (await sup.delegate(req)).id
        first = await node_of(baton_home, task_id)
        out = baton_home / "tasks" / task_id / "attempt-1.out"
        await wait_until("it works", lambda: out.exists() and b"working" in out.read_bytes())
        lost = nodes.by_id(first)
        nodes.cluster.remove_node(lost)
        try:
            await until_review(sup, task_id, 100)
            attempts = await sup.attempts(task_id)
            assert await node_of(baton_home, task_id, attempts[-1].n) != first
            events = await sup.events(task_id)
            states = [e.data["to"] for e in events if e.type == EventType.STATE]
            assert TaskState.INTERRUPTED in states, states
            assert attempts[0].completion == Completion.INTERRUPTED
            assert [a.reason for a in attempts[1:]] == ["resume"] * (len(attempts) - 1)
            files, _ = await sup.diff(task_id)
            assert {f.path for f in files} == {"done.txt"}
        finally:
            nodes.replace(lost)
    finally:
        await sup.close()


async def test_a_frozen_node_is_given_up_and_the_task_resumes_on_another(
    nodes: Nodes, config: Path, baton_home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node that stops answering (SIGSTOP: a hung host, a partition) says nothing at all;
    the relay's own silence limit (or the cluster's health check, whichever is first) gives
    it up and the task is retried elsewhere."""
    monkeypatch.setenv("BATON_RAY_IDLE", "2.5")
    steps = [
        {"say": "working", "chunks": 1},
        {"sleep": 4},
        {"write": "thawed.txt", "content": "z\n"},
    ]
    sup = await broker(baton_home)
    frozen: list[psutil.Process] = []
    try:
        req = DelegateRequest(instruction=fake_script(*steps), root=str(repo), worker="anywhere")
        task_id = (await sup.delegate(req)).id
        first = await node_of(baton_home, task_id)
        out = baton_home / "tasks" / task_id / "attempt-1.out"
        await wait_until("it works", lambda: out.exists() and b"working" in out.read_bytes())
        node = nodes.by_id(first)
        raylet = psutil.Process(node.all_processes["raylet"][0].process.pid)
        frozen = [raylet, *raylet.children(recursive=True)]
        for p in frozen:
            p.suspend()
        await until_review(sup, task_id, 100)
        last = (await sup.attempts(task_id))[-1]  # (one more may have gone to the frozen
        assert await node_of(baton_home, task_id, last.n) != first  # node before it was dead)
        assert remote_state(baton_home, task_id, 1)["lost"]
        files, _ = await sup.diff(task_id)
        assert {f.path for f in files} == {"thawed.txt"}
    finally:
        for p in frozen:
            with contextlib.suppress(psutil.Error):
                p.resume()
        if frozen:
            lost = nodes.by_id(first)
            nodes.cluster.remove_node(lost)
            nodes.replace(lost)
        await sup.close()


async def until_review(sup: Supervisor, task_id: str, timeout: float) -> None:
    """Wait for review through an interruption (settle() would stop at ``interrupted``)."""
    deadline = time.monotonic() + timeout
    while (state := (await sup.get(task_id)).state) != TaskState.REVIEW:
        assert state not in (TaskState.FAILED, TaskState.CANCELLED), state
        assert time.monotonic() < deadline, state
        await asyncio.sleep(0.05)


async def test_resources_no_node_has_fail_the_task_saying_so(
    nodes: Nodes, baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    odd = (
        f'[profiles.nowhere]\nprovider = "fake"\nrunner = "ray"\n'
        f'ray_address = "{nodes.address}"\nray_resources = {{gamma = 1}}\n'
    )
    user_config(tmp_path, 'sandbox = "off"\n' + odd)
    sup = await broker(baton_home)
    try:
        req = DelegateRequest(
            instruction=fake_script({"say": "x"}), root=str(repo), worker="nowhere"
        )
        task_id = (await sup.delegate(req)).id
        assert await settle(sup, task_id, timeout=60) == TaskState.FAILED
        task = await sup.get(task_id)
        assert "no node of the cluster has gamma" in task.message, task.message
    finally:
        await sup.close()
