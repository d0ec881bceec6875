"""Budgets from the `baton` command (issue 19): `--max-steps` on delegate stops the task with
completion `budget` (its work so far in review), `retry` without a raised cap is refused
naming the flag, and `retry --max-steps N` continues it to the end."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import fake_script
from tests.e2e.test_cli import _stop_brokers, as_json, baton

__all__ = ["_stop_brokers"]  # its autouse fixture stops the brokers these tests start


def test_max_steps_stops_the_task_and_retry_raises_it(baton_home: Path, repo: Path) -> None:
    brief = fake_script(
        {"write": "a.txt", "content": "a\n"},
        {"write": "b.txt", "content": "b\n"},  # the second call: past --max-steps 1
        {"sleep": 3},
        {"write": "c.txt", "content": "c\n"},
    )
    made = baton("delegate", "--json", "--cwd", str(repo), "--max-steps", "1", brief)
    assert made.returncode == 0, made.stderr
    task_id = as_json(made)["id"]
    stopped = as_json(baton("watch", "--json", task_id, "--timeout", "60"))["task"]
    assert (stopped["state"], stopped["completion"]) == ("review", "budget")
    assert "steps cap reached (2 steps of 1 steps)" in stopped["message"]
    assert "retry" in stopped["next"]

    refused = baton("retry", "--json", task_id, "--detach")
    assert refused.returncode != 0 and "--max-steps" in as_json(refused)["error"]

    resumed = baton("retry", task_id, "--max-steps", "10", "--json")
    assert resumed.returncode == 0, resumed.stderr + resumed.stdout
    info = as_json(baton("inspect", "--json", task_id))
    assert (info["state"], info.get("completion", "completed")) == ("review", "completed"), info
    diff = baton("diff", task_id)
    assert all(name in diff.stdout for name in ("a.txt", "b.txt", "c.txt")), diff.stdout
