"""Kill -9 the broker right after it recorded an edit of a queued task (``edit_recorded``):
the record is all the next broker reads, so it runs the new version, once — the old one is
nowhere left to start."""

from __future__ import annotations

import pytest

from baton.core.lifecycle import TaskState
from baton.runtime.requests import DelegateRequest
from tests.conftest import fake_script
from tests.crash.harness import Lab

pytestmark = pytest.mark.crash

S = TaskState
OLD = {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"}
NEW = {"edit": "app.py", "old": "    return 1\n", "new": "    return 20\n"}


async def test_an_edit_killed_before_the_task_starts_again_runs_the_new_version(
    lab: Lab,
) -> None:
    sup = await lab.restart()
    first = await sup.delegate(DelegateRequest(fake_script({"sleep": 4}), root=str(lab.repo)))
    second = await sup.delegate(
        DelegateRequest(fake_script(OLD), root=str(lab.repo), depends_on=[first.id])
    )
    await sup.close()  # the first runs on, detached; the second waits for it, unowned
    lab.sups.remove(sup)

    broker = lab.broker(
        crash_at="edit_recorded",
        tasks=[first.id, second.id],
        edit=(second.id, {"instruction": fake_script(NEW)}),
    )
    broker.wait_killed()

    sup = await lab.restart()
    task = await sup.get(second.id)
    assert task.state == S.QUEUED and "return 20" in task.instruction, task
    await lab.settle_in(sup, [first.id, second.id])
    assert (await sup.get(first.id)).state == S.ANSWERED
    assert (await sup.get(second.id)).state == S.REVIEW
    files, _ = await sup.diff(second.id)
    assert [h.new_text for f in files for h in f.hunks] == ["    return 20\n"]
    assert len(lab.runs(second.id)) == 1, lab.runs(second.id)  # one agent, the new version
    await lab.no_lingering()
