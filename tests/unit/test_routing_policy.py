"""The routing policy: explicit wins, allow lists, only, quality, preference, cool-downs."""

from __future__ import annotations

import pytest

from baton.core.routing import (
    Account,
    Evidence,
    KindRule,
    Policy,
    RoutingError,
    candidates,
    model_quality,
    route,
)

NOW = 1_000_000.0
ACCOUNTS = [
    Account("claude-a", "claude", "claude-sonnet-4-5", ("claude-sonnet-4-5", "claude-haiku-4-5")),
    Account("claude-b", "claude", "claude-sonnet-4-5", ("claude-sonnet-4-5",)),
    Account("codex", "codex", "gpt-5"),
    Account("off", "claude", "claude-opus-4-1", enabled=False),
    Account("fake", "fake"),
]
MECH = KindRule(allow=("claude/claude-haiku-4-5", "codex/gpt-5-mini"))
POLICY = Policy(default_worker="claude-a", kinds={"mechanical": MECH})


def test_explicit_worker_and_model_win() -> None:
    r = route("mechanical", POLICY, ACCOUNTS, worker="codex", model="o3", now=NOW)
    assert (r.worker, r.model, r.explicit) == ("codex", "o3", True)
    assert "named by the request" in r.reason


def test_named_worker_must_exist_be_enabled_and_allowed() -> None:
    with pytest.raises(RoutingError, match="unknown worker 'nope'"):
        route("general", POLICY, ACCOUNTS, worker="nope")
    with pytest.raises(RoutingError, match="disabled"):
        route("general", POLICY, ACCOUNTS, worker="off")
    only = Policy(default_worker="claude-a", only=("claude-a",))
    with pytest.raises(RoutingError, match="not allowed in this project"):
        route("general", only, ACCOUNTS, worker="codex")


def test_allow_list_best_first_with_enabled_models() -> None:
    r = route("mechanical", POLICY, ACCOUNTS, now=NOW)
    # claude-b does not enable haiku; codex lists no models (any model).
    assert [(c.worker, c.model) for c in r.candidates] == [
        ("claude-a", "claude-haiku-4-5"),
        ("codex", "gpt-5-mini"),
    ]
    assert (r.worker, r.model) == ("claude-a", "claude-haiku-4-5")
    assert "kind mechanical" in r.reason and "allow list" in r.reason


def test_no_rule_uses_the_default_worker_and_its_siblings() -> None:
    policy = Policy(default_worker="claude-a", default_model="claude-haiku-4-5")
    r = route("general", policy, ACCOUNTS, now=NOW)
    assert (r.worker, r.model) == ("claude-a", "claude-haiku-4-5")
    assert [c.worker for c in r.candidates] == ["claude-a", "claude-b"]  # same provider only


def test_cooling_account_is_passed_over_or_held() -> None:
    cooling = {"claude-a": NOW + 600}
    r = route("general", POLICY, ACCOUNTS, cooling=cooling, now=NOW)
    assert r.worker == "claude-b" and r.hold_until is None
    assert "passed over claude-a (cooling down until" in r.reason
    # An expired cool-down counts for nothing.
    assert route("general", POLICY, ACCOUNTS, cooling={"claude-a": NOW - 1}, now=NOW).worker == (
        "claude-a"
    )
    # Everyone cooling: wait for the first reset.
    both = {"claude-a": NOW + 600, "claude-b": NOW + 60}
    r = route("general", POLICY, ACCOUNTS, cooling=both, now=NOW)
    assert (r.worker, r.hold_until) == ("claude-b", NOW + 60)
    # on_rate_limit = hold: keep the first choice and wait for it.
    hold = Policy(default_worker="claude-a", on_rate_limit="hold")
    r = route("general", hold, ACCOUNTS, cooling=cooling, now=NOW)
    assert (r.worker, r.hold_until) == ("claude-a", NOW + 600)


def test_only_narrows_the_accounts() -> None:
    only = Policy(default_worker="claude-a", only=("claude-a",))
    r = route("general", only, ACCOUNTS, cooling={"claude-a": NOW + 600}, now=NOW)
    assert (r.worker, r.hold_until) == ("claude-a", NOW + 600)


def test_exclude_for_handoff() -> None:
    r = route("general", POLICY, ACCOUNTS, exclude={"claude-a"}, now=NOW)
    assert r.worker == "claude-b"
    with pytest.raises(RoutingError, match="no other worker"):
        route("general", POLICY, ACCOUNTS, exclude={"claude-a", "claude-b"}, now=NOW)


def test_min_quality_and_cheap_preference() -> None:
    allow = ("claude/claude-opus-4-1", "claude/claude-sonnet-4-5", "claude/claude-haiku-4-5")
    accounts = [Account("c", "claude", "claude-sonnet-4-5")]
    frontier = Policy("c", kinds={"reasoning": KindRule(allow, min_quality="frontier")})
    assert [x.model for x in candidates("reasoning", frontier, accounts)[0]] == ["claude-opus-4-1"]
    cheap = Policy("c", kinds={"mechanical": KindRule(allow, prefer="cheap")})
    assert [x.model for x in candidates("mechanical", cheap, accounts)[0]] == [
        "claude-haiku-4-5",
        "claude-sonnet-4-5",
        "claude-opus-4-1",
    ]
    # The project's word on a model's quality beats the guess from its name.
    rated = Policy(
        "c",
        kinds={"reasoning": KindRule(allow, min_quality="frontier")},
        qualities={"claude-sonnet-4-5": "frontier"},
    )
    assert [x.model for x in candidates("reasoning", rated, accounts)[0]] == [
        "claude-opus-4-1",
        "claude-sonnet-4-5",
    ]


def test_evidence_breaks_ties_between_equal_choices() -> None:
    rule = KindRule(allow=("claude/claude-sonnet-4-5",))
    policy = Policy("claude-a", kinds={"general": rule})
    good = {("claude-b", "claude-sonnet-4-5", "general"): Evidence(10, 10, 10, 9)}
    bad = {("claude-b", "claude-sonnet-4-5", "general"): Evidence(10, 1, 10, 0)}
    assert route("general", policy, ACCOUNTS, evidence=good, now=NOW).worker == "claude-b"
    assert route("general", policy, ACCOUNTS, evidence=bad, now=NOW).worker == "claude-a"
    # Evidence never beats the list's order between different entries.
    two = Policy("claude-a", kinds={"general": KindRule(("codex", "claude/claude-sonnet-4-5"))})
    assert route("general", two, ACCOUNTS, evidence=good, now=NOW).worker == "codex"
    # Unless the kind prefers evidence.
    ev = Policy(
        "claude-a",
        kinds={"general": KindRule(("codex", "claude/claude-sonnet-4-5"), prefer="evidence")},
    )
    assert route("general", ev, ACCOUNTS, evidence=good, now=NOW).worker == "claude-b"


def test_model_named_without_worker_picks_an_account_running_it() -> None:
    r = route("general", POLICY, ACCOUNTS, model="claude-haiku-4-5", now=NOW)
    assert (r.worker, r.model) == ("claude-a", "claude-haiku-4-5")
    r = route("general", POLICY, ACCOUNTS, model="gpt-5", now=NOW)
    assert r.worker == "codex"


def test_no_allowed_default_worker_says_why() -> None:
    policy = Policy(default_worker="off")
    with pytest.raises(RoutingError, match="default worker 'off'"):
        route("general", policy, ACCOUNTS, now=NOW)


@pytest.mark.parametrize(
    ("model", "quality"),
    [
        ("claude-haiku-4-5", "fast"),
        ("gpt-5-mini", "fast"),
        ("gemini-2.5-flash", "fast"),
        ("claude-sonnet-4-5", "standard"),
        ("claude-opus-4-1", "frontier"),
        ("gpt-5", "frontier"),
        ("o3", "frontier"),
        ("gemini-2.5-pro", "frontier"),
        (None, "standard"),
    ],
)
def test_model_quality_guess(model: str | None, quality: str) -> None:
    assert model_quality(model) == quality
