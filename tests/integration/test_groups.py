"""Compare (one brief, several workers) and task graphs (dependents start after accept)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from baton.config.profiles import Profile
from baton.core.lifecycle import TaskState as S
from baton.runtime.requests import DelegateRequest, GraphNode
from baton.runtime.supervisor import Supervisor, TaskError
from tests.conftest import fake_script, settle


def edit(new: str) -> dict[str, str]:
    return {"edit": "app.py", "old": "    return 1\n", "new": f"    return {new}\n"}


async def test_compare_three_workers_accept_one_the_others_are_cleaned_up(
    sup: Supervisor, repo: Path
) -> None:
    for name in ("fake-b", "fake-c"):
        sup.profiles[name] = Profile(name=name, provider="fake")
    req = DelegateRequest(instruction=fake_script(edit("10")), root=str(repo))
    tasks = await sup.compare(req, ["fake", "fake-b", "fake-c"])
    assert len({t.group for t in tasks}) == 1 and tasks[0].group
    for t in tasks:
        assert await settle(sup, t.id) == S.REVIEW
    winner, *others = tasks
    await sup.accept(winner.id)
    assert "return 10" in (repo / "app.py").read_text()
    for t in others:
        done = await sup.get(t.id)
        assert done.state == S.REJECTED
        assert done.worktree and not Path(done.worktree).exists()
    with pytest.raises(TaskError, match="two workers"):
        await sup.compare(req, ["fake"])


async def test_dependent_starts_only_after_its_prerequisite_is_accepted(
    sup: Supervisor, repo: Path
) -> None:
    graph = await sup.delegate_graph(
        [
            GraphNode(
                "second",
                DelegateRequest(
                    instruction=fake_script(
                        {"read": "app.py"},
                        {"edit": "app.py", "old": "    return 10\n", "new": "    return 11\n"},
                    ),
                    root=str(repo),
                ),
                after=["first"],
            ),
            GraphNode(
                "first", DelegateRequest(instruction=fake_script(edit("10")), root=str(repo))
            ),
        ]
    )
    first, second = graph["first"], graph["second"]
    assert await settle(sup, first.id) == S.REVIEW
    await asyncio.sleep(0.5)
    waiting = await sup.get(second.id)
    assert waiting.state == S.QUEUED and waiting.attempts == 0 and waiting.worktree is None
    await sup.accept(first.id)
    # The dependent starts from the accepted change.
    assert await settle(sup, second.id) == S.REVIEW
    files, _ = await sup.diff(second.id)
    assert [h.new_text for f in files for h in f.hunks] == ["    return 11\n"]


async def test_rejected_prerequisite_cancels_its_dependent(sup: Supervisor, repo: Path) -> None:
    first = await sup.delegate(DelegateRequest(instruction=fake_script(edit("10")), root=str(repo)))
    second = await sup.delegate(
        DelegateRequest(
            instruction=fake_script(edit("12")), root=str(repo), depends_on=[first.id[:8]]
        )
    )
    assert (await sup.get(second.id)).options["depends_on"] == [first.id]
    assert await settle(sup, first.id) == S.REVIEW
    await sup.reject(first.id)
    deadline = time.monotonic() + 5
    while (await sup.get(second.id)).state != S.CANCELLED:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    assert first.id in (await sup.get(second.id)).message


async def test_graph_cycles_and_unknown_nodes_are_refused(sup: Supervisor, repo: Path) -> None:
    def node(key: str, *after: str) -> GraphNode:
        return GraphNode(key, DelegateRequest(instruction="x", root=str(repo)), after=after)

    with pytest.raises(TaskError, match="cycle"):
        await sup.delegate_graph([node("a", "b"), node("b", "a")])
    with pytest.raises(TaskError, match="unknown"):
        await sup.delegate_graph([node("a", "zz")])
    assert await sup.list_tasks() == []
