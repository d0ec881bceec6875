"""``baton plan`` against a real broker started on demand and the fake agent as the planner
(issue 21): a proposed graph is checked, shown and run as a graph; an invalid one is refused
with the reason; a question the planner asks comes to the user."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli import as_json, baton, stop_brokers

PLAN = [
    {"key": "left", "instruction": "Create left/a.txt", "scope": ["left/**"], "worker": "doer"},
    {"key": "right", "instruction": "Create right/b.txt", "scope": ["right/**"], "worker": "doer"},
    {"key": "join", "instruction": "Write join.txt", "after": ["left", "right"], "worker": "doer"},
]
CYCLE = [
    {"key": "a", "instruction": "x", "after": ["b"], "scope": ["a/**"]},
    {"key": "b", "instruction": "y", "after": ["a"], "scope": ["b/**"]},
]


@pytest.fixture(autouse=True)
def _stop_brokers(baton_home: Path, tmp_path: Path) -> Iterator[None]:
    yield
    stop_brokers(tmp_path / "run" / "baton")


def profiles(repo: Path, tmp_path: Path, planner: dict[str, Any]) -> None:
    """``planner`` plays the planner's script; ``doer`` writes a file."""
    doer = {"steps": [{"write": "done.txt", "content": "done\n"}], "summary": "did it"}
    lines = ['default_worker = "doer"', 'only = ["planner", "doer"]']
    for name, body in (("planner", planner), ("doer", doer)):
        script = tmp_path / f"{name}.json"
        script.write_text(json.dumps(body))
        lines += [f"[profiles.{name}]", 'provider = "fake"', f'options = {{ script = "{script}" }}']
    (repo / ".baton.toml").write_text("\n".join(lines) + "\n")


def plan(repo: Path, *args: str) -> Any:
    return baton("plan", "--json", "--cwd", str(repo), "--worker", "planner", *args, timeout=120)


def test_a_plan_is_checked_approved_and_run_as_a_graph(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    answer = f"Here is the plan.\n```json\n{json.dumps(PLAN)}\n```\n"
    profiles(repo, tmp_path, {"steps": [{"say": "reading"}], "summary": answer})
    checked = plan(repo, "Split the work", "--dry-run")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert as_json(checked)["plan"] == PLAN and as_json(checked)["problems"] == []

    ran = plan(repo, "Split the work", "--yes")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    doc = as_json(ran)
    assert sorted(doc["tasks"]) == ["join", "left", "right"]
    for key in ("left", "right"):
        watched = baton("watch", doc["tasks"][key], timeout=60)
        assert watched.returncode == 0, watched.stdout + watched.stderr
        info = as_json(baton("inspect", "--json", doc["tasks"][key]))
        assert info["state"] == "review"
    join = as_json(baton("inspect", "--json", doc["tasks"]["join"]))
    assert join["state"] == "queued"  # it waits until left and right are accepted
    planner = as_json(baton("inspect", "--json", doc["task"]))
    assert planner["state"] == "answered"


def test_an_invalid_plan_is_refused_with_the_reason(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    profiles(repo, tmp_path, {"steps": [], "summary": json.dumps(CYCLE)})
    refused = plan(repo, "Loop", "--yes")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    doc = as_json(refused)
    assert doc["problems"] == ["the plan has a cycle: a → b → a"]
    assert "tasks" not in doc
    listed = as_json(baton("tasks", "--json"))
    assert isinstance(listed, list), listed
    assert [t["title"] for t in listed] == ["plan: Loop"]  # nothing of the plan started

    profiles(repo, tmp_path, {"steps": [], "summary": "I would rather not."})
    said = baton("plan", "--cwd", str(repo), "--worker", "planner", "--yes", "Anything")
    assert said.returncode == 1 and "holds no JSON list of nodes" in said.stdout, said.stdout


def test_a_question_from_the_planner_comes_to_the_user(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    profiles(repo, tmp_path, {"steps": [{"ask": "Which database?"}]})
    asked = plan(repo, "Add storage", "--yes")
    assert asked.returncode == 1, asked.stdout + asked.stderr
    doc = as_json(asked)
    assert doc["question"] == "Which database?" and doc["plan"] is None


def test_an_answered_planner_is_gone_on_with_by_its_id(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    profiles(repo, tmp_path, {"steps": [{"ask": "Which database?"}], "summary": json.dumps(PLAN)})
    asked = as_json(plan(repo, "Add storage", "--yes"))
    tid = asked["task"]
    assert f"baton plan --task {tid}" in baton("plan", "--cwd", str(repo), "--task", tid).stdout
    replied = baton("reply", tid, "SQLite")
    assert replied.returncode == 0, replied.stdout + replied.stderr
    ran = baton("plan", "--json", "--cwd", str(repo), "--task", tid, "--yes", timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert sorted(as_json(ran)["tasks"]) == ["join", "left", "right"]
    again = baton("plan", "--json", "--cwd", str(repo), "--task", tid, "--yes", timeout=120)
    assert again.returncode == 1 and "approved already" in again.stdout, again.stdout
    both = baton("plan", "--cwd", str(repo), "--task", tid, "Another goal")
    assert both.returncode == 2 and "give a goal, or --task" in both.stderr + both.stdout
