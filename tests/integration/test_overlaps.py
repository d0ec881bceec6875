"""One writer per file across tasks (issue 21): two live tasks that change the same file
know of each other, with the hunks that meet; accepting one re-bases the other's pending
hunks (told where they now stand) or marks them conflicting, and its accept never writes
over the first task's lines. Real git, SQLite and the fake agent."""

from __future__ import annotations

from pathlib import Path

from baton.core.events import EventType
from baton.core.lifecycle import TaskState
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor
from tests.conftest import fake_script, git, settle

S = TaskState
LINES = "".join(f"line {i}\n" for i in range(1, 21))


def delegate(repo: Path, *steps: dict[str, object]) -> DelegateRequest:
    return DelegateRequest(instruction=fake_script(*steps), root=str(repo))


async def test_two_tasks_on_one_file_know_of_each_other_and_accept_rebases(
    sup: Supervisor, repo: Path
) -> None:
    (repo / "long.txt").write_text(LINES)
    git(repo, "add", "long.txt")
    git(repo, "commit", "-q", "-m", "long")
    first = await sup.delegate(
        delegate(
            repo,
            {"edit": "long.txt", "old": "line 1\n", "new": "line 1\nA one\nA two\n"},
            {"edit": "long.txt", "old": "line 3\n", "new": "A3\n"},
        )
    )
    second = await sup.delegate(
        delegate(
            repo,
            {"edit": "long.txt", "old": "line 3\n", "new": "B3\n"},
            {"edit": "long.txt", "old": "line 10\n", "new": "B10\n"},
        )
    )
    assert await settle(sup, first.id) == S.REVIEW
    assert await settle(sup, second.id) == S.REVIEW
    (a_insert, a_three), (b_three, b_ten) = [
        (await sup.diff(t.id))[0][0].hunks for t in (first, second)
    ]

    files, _ = await sup.diff(second.id)
    notes = await sup.diff_notes(second.id, files)
    assert notes == {
        "overlaps": [
            {
                "path": "long.txt", "task": first.id, "title": first.title, "state": "review",
                "hunks": [[b_three.id, a_three.id]],
            }
        ]
    }  # fmt: skip
    theirs = await sup.diff_notes(first.id, (await sup.diff(first.id))[0])
    assert theirs["overlaps"][0]["hunks"] == [[a_three.id, b_three.id]]

    result = await sup.accept(first.id)
    assert sorted(result.applied) == sorted([a_insert.id, a_three.id])
    told = [
        str(e.data["message"])
        for e in await sup.events(second.id)
        if e.type == EventType.LOG and first.id in str(e.data.get("message"))
    ]
    assert told == [
        f"task {first.id} ({first.title}) was accepted into long.txt: "
        f"{b_three.id} conflicts; {b_ten.id} still applies (now at line 12)"
    ]
    notes = await sup.diff_notes(second.id, (await sup.diff(second.id))[0])
    assert "overlaps" not in notes  # the first task is applied: no longer live
    assert notes["standing"][b_ten.id] == {"applies": True, "line": 12}
    assert notes["standing"][b_three.id]["applies"] is False

    result = await sup.accept(second.id)
    assert result.applied == [b_ten.id]
    assert [h for h, _ in result.conflicts] == [b_three.id]
    text = (repo / "long.txt").read_text()
    assert "A3\n" in text and "B3" not in text and "B10\n" in text and "A one\nA two\n" in text
    assert (await sup.get(second.id)).state == S.REVIEW  # its conflicting hunk waits
