"""A task's tokens and cost as the `baton` command shows them: the fake agent reports usage,
the broker prices it (or keeps the agent's own cost), and `inspect`, `tasks`, the end of
`run` and the ledger (`stats`) all say the same numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import fake_script, user_config
from tests.e2e.test_cli import _stop_brokers, as_json, baton

__all__ = ["_stop_brokers"]  # its autouse fixture stops the brokers these tests start

EDIT = {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"}


@pytest.fixture
def priced(baton_home: Path, tmp_path: Path) -> None:
    """The user config prices ``my-model``: 2 per million input tokens, 10 per million out
    (its cached input left out, so it costs what input does)."""
    user_config(tmp_path, '[prices."my-model"]\ninput = 2.0\noutput = 10.0\n')


def test_estimated_cost_from_the_config_price_shows_everywhere(priced: None, repo: Path) -> None:
    script = fake_script(
        {"usage": {"input": 1000, "cached": 500, "output": 100, "reasoning": 40}},
        EDIT,
        summary="changed a()",
    )
    run = baton("run", "--cwd", str(repo), "--model", "my-model", script)
    assert run.returncode == 0, run.stderr
    # The end of `baton run`: one line with the tokens and the cost, marked an estimate.
    expected_line = "tokens 1000 in, 100 out, 500 cached, 40 reasoning · $0.0040 (estimated)"
    assert expected_line in run.stdout, run.stdout
    task_id = as_json(baton("tasks", "--json"))[0]["id"]

    info = as_json(baton("inspect", "--json", task_id))
    # (1000 + 500) x 2 + 100 x 10 = 4000 per million
    assert info["usage"] == {
        "input": 1000,
        "cached": 500,
        "output": 100,
        "reasoning": 40,
        "cost": pytest.approx(0.004),
        "cost_source": "estimated",
    }
    whole = as_json(baton("inspect", "--json", "--detail", "task", task_id))
    assert whole["detail"]["task"]["usage"]["cost_source"] == "estimated"
    human = baton("inspect", task_id)
    assert expected_line in human.stdout, human.stdout

    (line,) = as_json(baton("tasks", "--json"))
    assert (line["tokens"], line["costSource"]) == (1600, "estimated")
    assert line["cost"] == pytest.approx(0.004)
    row = next(ln for ln in baton("tasks").stdout.splitlines() if task_id in ln)
    assert row.split()[5:7] == ["1.6k", "~$0.0040"], row


def test_the_agents_own_cost_is_reported_and_wins(priced: None, repo: Path) -> None:
    script = fake_script({"usage": {"input": 1000, "output": 100, "cost": 0.25}}, EDIT)
    run = baton("run", "--json", "--cwd", str(repo), "--model", "my-model", script)
    assert run.returncode == 0, run.stderr
    task = as_json(run)["task"]
    assert (task["tokens"], task["cost"], task["costSource"]) == (1100, 0.25, "reported")

    info = as_json(baton("inspect", "--json", task["id"]))
    assert info["usage"]["cost"] == 0.25 and info["usage"]["cost_source"] == "reported"
    row = next(ln for ln in baton("tasks").stdout.splitlines() if task["id"] in ln)
    assert "$0.2500" in row.split(), row

    # The ledger's row has the same tokens and cost.
    (row,) = as_json(baton("stats", "--json"))["stats"]
    assert (row["inputTokens"], row["outputTokens"], row["cost"]) == (1000, 100, 0.25)


def test_a_model_without_a_price_has_tokens_and_no_cost(baton_home: Path, repo: Path) -> None:
    script = fake_script({"usage": {"input": 10, "output": 2}}, EDIT)
    run = baton("run", "--json", "--cwd", str(repo), script)
    assert run.returncode == 0, run.stderr
    task = as_json(run)["task"]
    assert task["tokens"] == 12 and "cost" not in task
    info = as_json(baton("inspect", "--json", task["id"]))
    assert info["usage"] == {
        "input": 10,
        "cached": 0,
        "output": 2,
        "cost": None,
        "cost_source": None,
    }
    row = next(ln for ln in baton("tasks").stdout.splitlines() if task["id"] in ln)
    assert row.split()[5:7] == ["12", "-"], row  # tokens, then no cost
