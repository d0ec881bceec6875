"""Graphs and comparisons through the CLI and the websocket: one call, several tasks."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import fake_script
from tests.e2e.test_cli import as_json, baton, stop_brokers


@pytest.fixture(autouse=True)
def _stop_brokers(baton_home: Path, tmp_path: Path) -> Iterator[None]:
    yield
    stop_brokers(tmp_path / "run" / "baton")


def state(task_id: str) -> str:
    return str(as_json(baton("inspect", "--json", task_id))["state"])


def wait_state(task_id: str, *states: str, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while (now := state(task_id)) not in states:
        assert time.monotonic() < deadline, f"{task_id} still {now}"
        time.sleep(0.2)
    return now


def test_a_graph_in_one_call_the_dependent_waits_for_the_accept(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    nodes = [
        {
            "key": "tests",
            "after": ["impl"],
            "instruction": fake_script(
                {"edit": "app.py", "old": "    return 10\n", "new": "    return 11\n"}
            ),
        },
        {
            "key": "impl",
            "instruction": fake_script(
                {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"}
            ),
        },
    ]
    spec = tmp_path / "graph.json"
    spec.write_text(json.dumps(nodes))
    made = baton("graph", "--json", "--cwd", str(repo), str(spec))
    assert made.returncode == 0, made.stderr
    tasks = as_json(made)["tasks"]
    impl, dependent = tasks["impl"]["id"], tasks["tests"]["id"]
    assert wait_state(impl, "review") == "review"
    assert state(dependent) == "queued"
    assert baton("accept", impl).returncode == 0
    assert wait_state(dependent, "review") == "review"
    diff = as_json(baton("diff", "--json", dependent))
    assert [h["newText"] for f in diff["files"] for h in f["hunks"]] == ["    return 11\n"]

    cycle = [
        {"key": "a", "after": ["b"], "instruction": "x"},
        {"key": "b", "after": ["a"], "instruction": "y"},
    ]
    spec.write_text(json.dumps(cycle))
    refused = baton("graph", "--cwd", str(repo), str(spec))
    assert refused.returncode == 2 and "cycle" in refused.stderr


def test_compare_from_the_command_line(baton_home: Path, repo: Path) -> None:
    made = baton(
        "delegate",
        "--json",
        "--cwd",
        str(repo),
        "--compare",
        "fake,fake",
        fake_script({"edit": "app.py", "old": "    return 1\n", "new": "    return 7\n"}),
    )
    assert made.returncode == 0, made.stderr
    res = as_json(made)
    ids = [t["id"] for t in res["tasks"]]
    assert len(ids) == 2 and res["group"]
    for tid in ids:
        wait_state(tid, "review")
    assert baton("accept", ids[1]).returncode == 0
    assert wait_state(ids[0], "rejected") == "rejected"
    assert "return 7" in (repo / "app.py").read_text()
    bad = baton("delegate", "--cwd", str(repo), "--compare", "fake", "x")
    assert bad.returncode == 2 and "two or more" in bad.stderr
