"""Usage in one shape: adding, folding running totals, JSON, the price table and its config."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.config.layers import ConfigError
from baton.config.profiles import Profile
from baton.config.settings import load_settings
from baton.core.events import Event, EventType
from baton.core.outcome import Outcome
from baton.core.usage import (
    DEFAULT_PRICES,
    ESTIMATED,
    REPORTED,
    Price,
    Usage,
    of_task,
    own_part,
    price_for,
    record_attempt,
    short_cost,
    short_tokens,
)

BASE = {"fake": Profile(name="fake", provider="fake", label="fake agent")}


def test_of_keeps_counts_and_marks_a_given_cost_reported() -> None:
    u = Usage.of(input=10, cached_input=5, output=3, reasoning=1, cost=0.25)
    assert (u.input, u.cached_input, u.output, u.reasoning) == (10, 5, 3, 1)
    assert (u.cost, u.cost_source) == (0.25, REPORTED)
    assert u.tokens == 18
    none = Usage.of(input=-4, output="x", cost=True)  # nonsense counts are 0, a bool no cost
    assert none == Usage()
    assert none.empty


def test_adding_sums_counts_and_costs_and_says_where_the_cost_came_from() -> None:
    a = Usage.of(input=100, output=10, cost=0.5)
    b = Usage(input=50, cached_input=20, output=5, reasoning=2, cost=0.25, cost_source=ESTIMATED)
    total = a + b
    assert (total.input, total.cached_input, total.output, total.reasoning) == (150, 20, 15, 2)
    assert total.cost == pytest.approx(0.75)
    assert total.cost_source == ESTIMATED  # one part was an estimate
    both = a + Usage.of(input=1, cost=0.1)
    assert both.cost_source == REPORTED and both.cost == pytest.approx(0.6)
    assert a + Usage() == a and Usage() + a == a
    unpriced = Usage.of(input=1) + Usage.of(output=2)
    assert unpriced.cost is None and unpriced.cost_source is None and unpriced.reasoning is None


def test_widen_takes_the_larger_running_total_and_the_later_cost() -> None:
    first = Usage.of(input=100, output=10, reasoning=3)
    later = Usage.of(input=0, output=0, cost=0.2)  # an ACP usage_update: only a cost
    w = first.widen(later)
    assert (w.input, w.output, w.reasoning, w.cost, w.cost_source) == (100, 10, 3, 0.2, REPORTED)
    assert w.widen(Usage.of(input=150, output=12)).cost == 0.2  # no cost: the earlier stays


def test_json_round_trip_and_older_records() -> None:
    u = Usage(input=7, cached_input=3, output=2, reasoning=1, cost=0.01, cost_source=ESTIMATED)
    d = u.to_json()
    assert d == {
        "input": 7,
        "cached": 3,
        "output": 2,
        "reasoning": 1,
        "cost": 0.01,
        "cost_source": "estimated",
    }
    assert Usage.from_json(d) == u
    assert "reasoning" not in Usage.of(input=1).to_json()
    # A record from before cost_source: its cost was always the CLI's.
    old = Usage.from_json({"input": 5, "output": 1, "cost": 0.3})
    assert old.cost_source == REPORTED
    assert Usage.from_json(None) == Usage()


def test_outcome_folds_usage_events_and_the_model() -> None:
    events = [
        Event(EventType.SESSION, {"id": "s1", "model": "claude-haiku-4-5"}),
        Event(EventType.USAGE, Usage.of(input=10, output=1).to_json()),
        Event(EventType.USAGE, Usage.of(input=30, cached_input=4, output=5).to_json()),
    ]
    out = Outcome.fold(events)
    assert out.model == "claude-haiku-4-5"
    assert out.usage == Usage.of(input=30, cached_input=4, output=5)
    assert (out.input_tokens, out.output_tokens, out.cost) == (34, 5, None)


def test_price_arithmetic_per_million_tokens() -> None:
    price = Price(input=3.0, cached_input=0.3, output=15.0)
    u = Usage.of(input=1_000_000, cached_input=2_000_000, output=100_000)
    assert price.cost(u) == pytest.approx(3.0 + 0.6 + 1.5)
    estimated = u.priced(price)
    assert estimated.cost == pytest.approx(5.1) and estimated.cost_source == ESTIMATED
    assert Usage.of(input=5).priced(None).cost is None


def test_a_reported_cost_wins_over_the_table() -> None:
    reported = Usage.of(input=58902, output=38, cost=0.5)
    assert reported.priced(Price(100.0, 100.0, 100.0)) == reported


def test_the_shipped_sonnet_price_gives_what_claude_code_reported() -> None:
    # tests/fixtures/streams/claude-write.jsonl: 58902 in, 38 out, total_cost_usd 0.177276.
    price = price_for("claude-sonnet-4-5")
    assert price is not None
    assert price.cost(Usage.of(input=58902, output=38)) == pytest.approx(0.177276)


def test_price_lookup_by_name_prefix_and_provider() -> None:
    assert price_for("claude-sonnet-4-5-20250929") == DEFAULT_PRICES["claude-sonnet-4-5"]
    assert price_for("anthropic/claude-haiku-4-5") == DEFAULT_PRICES["claude-haiku-4-5"]
    assert price_for("gpt-5-codex") == DEFAULT_PRICES["gpt-5-codex"]
    assert price_for("gpt-5.1-codex-mini") == DEFAULT_PRICES["gpt-5.1-codex-mini"]
    assert price_for("gemini-2.5-flash-lite") == DEFAULT_PRICES["gemini-2.5-flash-lite"]
    assert price_for("gemini-2.5-flash-preview-09-2025") == DEFAULT_PRICES["gemini-2.5-flash"]
    assert price_for("my-local-model") is None
    assert price_for(None) is None
    mine = {"my-local-model": Price(1.0, 1.0, 2.0)}
    assert price_for("my-local-model", mine) == Price(1.0, 1.0, 2.0)


def test_every_shipped_price_is_a_plausible_rate() -> None:
    for name, p in DEFAULT_PRICES.items():
        assert 0 < p.cached_input <= p.input < p.output, name


def test_record_attempt_sums_attempts_and_counts_one_attempt_once() -> None:
    options: dict[str, object] = {}
    record_attempt(options, 1, Usage.of(input=100, output=10, cost=0.1))
    record_attempt(options, 2, Usage(input=50, output=5, cost=0.05, cost_source=ESTIMATED))
    again = record_attempt(options, 2, Usage(input=50, output=5, cost=0.05, cost_source=ESTIMATED))
    assert (again.input, again.output) == (150, 15)
    assert again.cost == pytest.approx(0.15) and again.cost_source == ESTIMATED
    assert of_task(options) == again
    assert of_task({}) == Usage()


def test_table_cells() -> None:
    assert short_cost(Usage.of(input=1, cost=0.17)) == "$0.1700"
    assert short_cost(Usage(input=1, cost=0.0012, cost_source=ESTIMATED)) == "~$0.0012"
    assert short_cost(Usage.of(input=1)) == "-"
    assert [short_tokens(n) for n in (0, 412, 58940, 1_710_000)] == ["-", "412", "58.9k", "1.7M"]
    line = Usage(input=10, cached_input=2, output=3, cost=0.5, cost_source=ESTIMATED).line()
    assert line == "tokens 10 in, 3 out, 2 cached · $0.5000 (estimated)"


# -- the config's [prices] -------------------------------------------------------------------


def settings_with(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    user = tmp_path / "xdg" / "baton" / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(text)
    return load_settings(None, profiles=BASE, user_config=user)


def test_config_prices_override_the_shipped_ones(tmp_path: Path) -> None:
    s = settings_with(
        tmp_path,
        '[prices."claude-sonnet-4-5"]\ninput = 2.0\n\n'
        '[prices."my-local-model"]\ninput = 0.5\noutput = 1\n',
    )
    sonnet = s.price_for("claude-sonnet-4-5-20250929")
    # input given; output kept from the shipped price; cached_input follows the given input.
    assert sonnet == Price(2.0, 2.0, 15.0)
    assert s.price_for("my-local-model") == Price(0.5, 0.5, 1.0)
    assert s.price_for("claude-haiku-4-5") == DEFAULT_PRICES["claude-haiku-4-5"]
    cost = Usage.of(input=1_000_000, output=1_000_000).priced(s.price_for("my-local-model"))
    assert cost.cost == pytest.approx(1.5) and cost.cost_source == ESTIMATED


def test_config_cached_input_alone_keeps_the_rest(tmp_path: Path) -> None:
    s = settings_with(tmp_path, '[prices."gpt-5"]\ncached_input = 0.1\n')
    assert s.price_for("gpt-5") == Price(1.25, 0.1, 10.0)


def test_config_price_for_an_unknown_model_needs_input_and_output(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="needs output"):
        settings_with(tmp_path, '[prices."my-local-model"]\ninput = 1\n')


def test_config_price_must_be_a_number(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"prices\.my-model\.input: must be a number"):
        settings_with(tmp_path, '[prices."my-model"]\ninput = "cheap"\noutput = 1\n')


def test_config_price_unknown_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown"):
        settings_with(tmp_path, '[prices."gpt-5"]\nreasoning = 1\n')


def test_since_subtracts_an_earlier_report_of_the_same_running_total() -> None:
    later = Usage(300, 40, 30, 6, 0.3, ESTIMATED)
    earlier = Usage(100, 10, 10, 2, 0.1, ESTIMATED)
    part = later.since(earlier)
    assert (part.input, part.cached_input, part.output, part.reasoning) == (200, 30, 20, 4)
    assert part.cost == pytest.approx(0.2)
    assert later.since(Usage()) == later
    # A count that went down: the total started again, so the report is whole.
    assert Usage(50, 0, 30).since(Usage(100, 0, 10)) == Usage(50, 0, 30)


def test_own_part_takes_the_last_report_of_the_same_session() -> None:
    options: dict[str, object] = {}
    assert own_part(options, 1, "s1", Usage(100, 0, 10)) == Usage(100, 0, 10)
    assert own_part(options, 2, "s2", Usage(40, 0, 4)) == Usage(40, 0, 4)  # a fresh session
    assert own_part(options, 3, "s1", Usage(250, 0, 25)) == Usage(150, 0, 15)
    assert own_part(options, 4, "s1", Usage(300, 0, 30)) == Usage(50, 0, 5)
    assert own_part(options, 5, None, Usage(7, 0, 1)) == Usage(7, 0, 1)


def test_own_part_keeps_a_report_that_does_not_hold_the_earlier_one() -> None:
    """A process that reports its own usage (seen_input: what its own calls read) is counted
    whole, even when each of its counts is above the earlier report's."""
    options: dict[str, object] = {}
    own_part(options, 1, "s", Usage(100, 0, 10), seen_input=100)
    assert own_part(options, 2, "s", Usage(150, 0, 20), seen_input=150) == Usage(150, 0, 20)
    # One that holds it (the earlier 100 and its own 150) is counted less that.
    assert own_part(options, 3, "s", Usage(400, 0, 45), seen_input=150) == Usage(250, 0, 25)


def test_an_attempt_still_running_is_counted_the_same_without_a_write() -> None:
    """What a budget watching a running attempt sees: the same part, nothing kept."""
    options: dict[str, object] = {}
    own_part(options, 1, "s", Usage(100, 0, 10))
    kept = dict(options)
    running = Outcome(session_id="s", usage=Usage(250, 0, 25), session_totals=True)
    assert running.own_usage(options, 2) == Usage(150, 0, 15)
    assert options == kept
    assert Outcome(usage=Usage(250, 0, 25)).own_usage(options, 2) == Usage(250, 0, 25)
