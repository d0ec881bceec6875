"""Independent review: a different worker reviews the change; findings tie to lines."""

from __future__ import annotations

import json
from pathlib import Path

from baton.config.profiles import Profile
from baton.core.events import EventType
from baton.core.lifecycle import TaskState
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor
from tests.conftest import fake_script, settle

FINDING = {"path": "app.py", "line": 2, "severity": "error", "message": "10 is off by one"}


def reviewer(sup: Supervisor, tmp_path: Path, name: str, *answers: dict[str, object]) -> None:
    """A fake reviewer whose turns answer with the given verdicts, one per review."""
    steps: list[dict[str, object]] = []
    for answer in answers:
        steps += [{"say": json.dumps(answer)}, {"end_turn": ""}]
    script = tmp_path / f"{name}.json"
    script.write_text(json.dumps({"steps": steps}))
    sup.profiles[name] = Profile(name=name, provider="fake", options={"script": str(script)})


async def test_review_requests_changes_with_a_finding_then_approves_the_repair(
    sup: Supervisor, repo: Path, tmp_path: Path
) -> None:
    reviewer(
        sup,
        tmp_path,
        "critic",
        {"verdict": "request_changes", "summary": "wrong value", "findings": [FINDING]},
    )
    # A second review (after the repair) is a fresh session of the reviewer: same script,
    # so give the second reviewer profile an approving script instead.
    task = await sup.delegate(
        DelegateRequest(
            instruction=fake_script(
                {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
                {"end_turn": "first try"},
                {"edit": "app.py", "old": "    return 10\n", "new": "    return 11\n"},
            ),
            root=str(repo),
            options={"review": {"worker": "critic"}, "repair_rounds": 1},
        )
    )
    assert await settle(sup, task.id) == TaskState.REVIEW
    done = await sup.get(task.id)
    reviews = [e for e in await sup.events(task.id) if e.type == EventType.REVIEW]
    assert reviews[0].data["verdict"] == "request_changes"
    assert reviews[0].data["findings"] == [FINDING]
    assert reviews[0].data["worker"] == "critic"
    attempts = await sup.attempts(task.id)
    assert [(a.reason, a.worker) for a in attempts][:3] == [
        ("first", "fake"),
        ("review", "critic"),
        ("repair", "fake"),
    ]
    # The author's session was never replaced by the reviewer's.
    assert attempts[2].session_id == attempts[0].session_id != attempts[1].session_id
    files, _ = await sup.diff(task.id)
    assert [h.new_text for f in files for h in f.hunks] == ["    return 11\n"]
    assert "review by critic" in done.message
    assert done.options["review_result"]["worker"] == "critic"
    # The reviewer's own checkout is gone; the task's worktree stays for the user.
    assert not (sup.home / "worktrees" / f"{task.id}-review").exists()


async def test_an_approving_review_reaches_review_directly(
    sup: Supervisor, repo: Path, tmp_path: Path
) -> None:
    reviewer(sup, tmp_path, "fan", {"verdict": "approve", "summary": "looks right"})
    task = await sup.delegate(
        DelegateRequest(
            instruction=fake_script(
                {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"}
            ),
            root=str(repo),
            options={"review": {"worker": "fan"}},
        )
    )
    assert await settle(sup, task.id) == TaskState.REVIEW
    done = await sup.get(task.id)
    assert done.message == "review by fan: approve"
    assert [a.reason for a in await sup.attempts(task.id)] == ["first", "review"]


async def test_the_author_never_reviews_its_own_change(sup: Supervisor, repo: Path) -> None:
    task = await sup.delegate(
        DelegateRequest(
            instruction=fake_script(
                {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"}
            ),
            root=str(repo),
            options={"review": {"worker": "fake"}},
        )
    )
    assert await settle(sup, task.id) == TaskState.REVIEW
    assert "review skipped: fake wrote the change" in (await sup.get(task.id)).message
