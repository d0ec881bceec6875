"""The pure budget rules (baton.core.budget) and the config's budgets."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.config.layers import ConfigError
from baton.config.settings import load_settings
from baton.core import budget
from baton.core.budget import Caps, Spent


def test_a_cap_is_reached_at_its_limit_and_steps_past_it() -> None:
    caps = Caps(tokens=1000, steps=3)
    assert budget.breach(caps, Spent(tokens=999, steps=3), "task", "t") is None
    hit = budget.breach(caps, Spent(tokens=1000), "task", "t")
    assert hit is not None and (hit.measure, hit.used, hit.limit) == ("tokens", 1000, 1000)
    over = budget.breach(caps, Spent(steps=4), "task", "t")
    assert over is not None and over.measure == "steps"
    assert "steps cap reached (4 steps of 3 steps)" in over.message
    # Before a start nothing may be left: three steps used of three is reached.
    assert budget.breach(caps, Spent(steps=3), "task", "t", starting=True) is not None


def test_cost_and_seconds_and_the_stop_event() -> None:
    hit = budget.breach(Caps(cost=0.5, seconds=60), Spent(cost=0.51), "project", "/p", day="d")
    assert hit is not None and hit.to_json() == {
        "kind": "stop",
        "scope": "project",
        "name": "/p",
        "measure": "cost",
        "used": 0.51,
        "limit": 0.5,
        "message": "budget: the project's daily cost cap reached ($0.5100 of $0.5000)",
        "day": "d",
    }
    assert budget.breach(Caps(seconds=60), Spent(seconds=61), "task", "t") is not None


def test_alerts_at_80_and_90_percent() -> None:
    caps = Caps(tokens=1000, cost=10.0)
    assert budget.alerts(caps, Spent(tokens=799, cost=1.0)) == []
    assert budget.alerts(caps, Spent(tokens=800)) == [("tokens", 80)]
    assert budget.alerts(caps, Spent(tokens=950, cost=9.0)) == [
        ("tokens", 80),
        ("tokens", 90),
        ("cost", 80),
        ("cost", 90),
    ]
    data = budget.alert_data("profile", "work", "2026-12-01", "tokens", 80, 812, 1000)
    assert data["message"] == (
        "budget: profile work's daily tokens at 80 % (812 tokens of 1000 tokens on 2026-12-01)"
    )


def test_the_more_specific_cap_wins_per_measure_and_raising_keeps_the_rest() -> None:
    assert Caps(tokens=1, steps=2).over(Caps(tokens=5)) == Caps(tokens=5, steps=2)
    options: dict[str, object] = {"budget": {"tokens": 100, "steps": 4}}
    assert budget.raise_caps(options, Caps(tokens=500)) == Caps(tokens=500, steps=4)
    assert options["budget"] == {"tokens": 500, "steps": 4}


def test_day_start_is_local_midnight() -> None:
    now = 1_796_000_000.0
    start = budget.day_start(now)
    assert start <= now < start + 25 * 3600 and budget.day_of(start) == budget.day_of(now)


def test_budgets_from_the_config(tmp_path: Path) -> None:
    (tmp_path / ".baton.toml").write_text(
        "[budget]\ntask_tokens = 1000\nday_cost = 2.5\n"
        '[budget.models."m1"]\ntask_steps = 3\n'
        '[profiles.fake]\nprovider = "fake"\n[profiles.fake.budget]\ntask_tokens = 500\n'
        "day_tokens = 100000\n"
    )
    s = load_settings(tmp_path, user_config=tmp_path / "none.toml")
    b = s.budgets
    assert b.task_caps("fake", "m1") == Caps(tokens=500, steps=3)
    assert b.task_caps("other", None, Caps(seconds=9)) == Caps(tokens=1000, seconds=9)
    assert b.day == Caps(cost=2.5) and b.profile_day("fake") == Caps(tokens=100000)


def test_a_bad_budget_value_names_its_key(tmp_path: Path) -> None:
    (tmp_path / ".baton.toml").write_text("[budget]\ntask_tokens = -3\n")
    with pytest.raises(ConfigError, match=r"budget\.task_tokens: must be a whole number"):
        load_settings(tmp_path, user_config=tmp_path / "none.toml")
