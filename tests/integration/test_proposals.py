"""Proposals (an edit another tool proposes, e.g. Claude Code in a terminal) through a real
Supervisor: real git snapshots, real SQLite, hunk-by-hunk decisions, nothing written by Baton."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from baton.core.diff import FileStatus
from baton.core.lifecycle import TaskState
from baton.runtime.supervisor import Supervisor, TaskError

S = TaskState
OLD = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
NEW = "def a():\n    return 10\n\n\ndef b():\n    return 20\n"


async def propose(sup: Supervisor, repo: Path, new: str = NEW, name: str = "app.py"):  # type: ignore[no-untyped-def]
    file = repo / name
    base = file.read_text() if file.exists() else None
    return await sup.propose(
        file, base, new, root=repo, title=f"Claude Code: edit {name}", source="claude-code"
    )


async def test_hunk_by_hunk_then_the_answer_is_the_accepted_hunks(
    sup: Supervisor, repo: Path
) -> None:
    task, decided = await propose(sup, repo)
    assert task.state == S.REVIEW and task.options["proposal"]["file"] == str(repo / "app.py")
    files, final = await sup.diff(task.id)
    assert final and [f.path for f in files] == ["app.py"] and len(files[0].hunks) == 2
    first, second = files[0].hunks
    result = await sup.accept(task.id, [first.id])
    assert result.applied == [first.id] and not decided.done()
    assert (repo / "app.py").read_text() == OLD  # Baton writes nothing
    await sup.reject(task.id, [second.id])
    assert await asyncio.wait_for(decided, 5) == OLD.replace("return 1\n", "return 10\n")
    assert (await sup.get(task.id)).state == S.APPLIED
    assert (repo / "app.py").read_text() == OLD  # the proposer writes it


async def test_reject_all_answers_none(sup: Supervisor, repo: Path) -> None:
    task, decided = await propose(sup, repo)
    assert len(await sup.reject(task.id)) == 2
    assert await asyncio.wait_for(decided, 5) is None
    assert (await sup.get(task.id)).state == S.REJECTED


async def test_a_new_file_is_one_whole_file_hunk(sup: Supervisor, repo: Path) -> None:
    task, decided = await propose(sup, repo, "hello\n", "new.txt")
    files, _ = await sup.diff(task.id)
    assert files[0].status == FileStatus.ADDED and files[0].hunks[0].whole_file
    await sup.accept(task.id)
    assert await asyncio.wait_for(decided, 5) == "hello\n"
    assert not (repo / "new.txt").exists()


async def test_edits_the_user_saved_meanwhile_are_kept(sup: Supervisor, repo: Path) -> None:
    task, decided = await propose(sup, repo)
    (repo / "app.py").write_text("# mine\n" + OLD)
    await sup.accept(task.id)
    assert await asyncio.wait_for(decided, 5) == "# mine\n" + NEW


async def test_a_hunk_that_clashes_with_saved_edits_stays_pending(
    sup: Supervisor, repo: Path
) -> None:
    task, decided = await propose(sup, repo)
    (repo / "app.py").write_text(OLD.replace("return 1\n", "return 100\n"))
    result = await sup.accept(task.id)
    assert len(result.applied) == 1 and len(result.conflicts) == 1
    assert "conflicts with your changes" in result.conflicts[0][1]
    assert not decided.done() and (await sup.get(task.id)).state == S.REVIEW


async def test_unsaved_editor_edits_block_the_accept(sup: Supervisor, repo: Path) -> None:
    task, decided = await propose(sup, repo)
    result = await sup.accept(task.id, current={"app.py": "# typing\n" + OLD}, write=False)
    assert not result.applied and len(result.conflicts) == 2
    assert "unsaved edits" in result.conflicts[0][1]
    assert not decided.done()


async def test_an_unchanged_file_is_answered_at_once(sup: Supervisor, repo: Path) -> None:
    task, decided = await propose(sup, repo, OLD)
    assert decided.done() and decided.result() == OLD
    assert (await sup.get(task.id)).state == S.ANSWERED


async def test_withdrawn_when_the_proposer_stops_waiting(sup: Supervisor, repo: Path) -> None:
    task, decided = await propose(sup, repo)
    await sup.withdraw(task.id, "answered in the Claude Code terminal")
    got = await sup.get(task.id)
    assert got.state == S.CANCELLED and got.message == "answered in the Claude Code terminal"
    assert decided.cancelled()
    with pytest.raises(TaskError, match="accept is for tasks in review"):
        await sup.accept(task.id)


async def test_moves_that_need_an_agent_are_refused_by_name(sup: Supervisor, repo: Path) -> None:
    task, _ = await propose(sup, repo)
    moves = (
        sup.reply(task.id, "more"),
        sup.retry(task.id),
        sup.handoff(task.id),
        sup.complete(task.id, "it works"),
    )
    for move in moves:
        with pytest.raises(TaskError, match="claude-code proposed"):
            await move


async def test_only_the_broker_that_waits_can_decide_and_a_dead_ones_are_withdrawn(
    baton_home: Path, repo: Path
) -> None:
    first = Supervisor(baton_home)
    await first.start()
    second = Supervisor(baton_home)
    await second.start()
    try:
        task, _ = await propose(first, repo)
        with pytest.raises(TaskError, match="another broker is waiting"):
            await second.accept(task.id)
        with pytest.raises(TaskError, match="another broker is waiting"):
            await second.reject(task.id)
        await first.close()  # it withdraws what it held
        assert (await second.get(task.id)).state == S.CANCELLED
    finally:
        await second.close()


CRASHING_BROKER = """
import asyncio, os, sys
from pathlib import Path
from baton.runtime.supervisor import Supervisor

async def main() -> None:
    repo = Path(sys.argv[2])
    sup = Supervisor(Path(sys.argv[1]))
    await sup.start()
    file = repo / "app.py"
    task, _ = await sup.propose(
        file, file.read_text(), "changed\\n", root=repo, title="t", source="claude-code"
    )
    print(task.id, flush=True)
    os._exit(9)  # a crash: nothing is withdrawn on the way out

asyncio.run(main())
"""


async def test_a_crashed_brokers_proposals_are_withdrawn_by_the_next(
    baton_home: Path, repo: Path
) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CRASHING_BROKER,
        str(baton_home),
        str(repo),
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 9
    task_id = out.decode().strip()
    sup = Supervisor(baton_home)
    await sup.start()  # adopts what dead brokers left
    try:
        task = await sup.get(task_id)
        assert task.state == S.CANCELLED and "proposer is gone" in task.message
    finally:
        await sup.close()
