"""A big file of repetitive text reaches review fast (issue 18: 16 s before the line diff)."""

from __future__ import annotations

import time
from pathlib import Path

from baton.core.lifecycle import TaskState
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor
from tests.conftest import fake_script, git, settle


async def test_three_edits_in_a_20000_line_file_reach_review_in_seconds(
    sup: Supervisor, repo: Path
) -> None:
    lines = ["}\n" if i % 3 == 0 else "\n" for i in range(20_000)]
    for at, name in ((4_000, "alpha"), (11_000, "beta"), (17_000, "gamma")):
        lines[at] = f"    {name} = 1\n"
    (repo / "big.txt").write_text("".join(lines))
    git(repo, "add", "big.txt")
    git(repo, "commit", "-q", "-m", "big")
    steps = [
        {"edit": "big.txt", "old": f"    {name} = 1\n", "new": f"    {name} = 2\n"}
        for name in ("alpha", "beta", "gamma")
    ]
    t0 = time.monotonic()
    task = await sup.delegate(DelegateRequest(instruction=fake_script(*steps), root=str(repo)))
    assert await settle(sup, task.id) == TaskState.REVIEW
    took = time.monotonic() - t0
    files, final = await sup.diff(task.id)
    assert final and [len(f.hunks) for f in files] == [3]
    assert took < 10.0, f"delegate → review took {took:.1f} s"
