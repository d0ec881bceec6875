"""``why_unusable``: the offline look at whether a profile can run, as the worker pickers and
the default's choice read it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from baton.config.logins import choose_default, why_unusable
from baton.config.profiles import Profile


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(key, raising=False)


def test_the_fake_agent_runs_and_a_disabled_profile_does_not() -> None:
    assert why_unusable(Profile("fake", "fake")) is None
    assert why_unusable(Profile("off", "fake", enabled=False)) == "disabled"


def test_a_missing_binary_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "claude"
    assert why_unusable(Profile("c", "claude", binary=str(missing))) == f"{missing} not installed"
    argv = {"argv": [str(missing), "--run"]}
    assert why_unusable(Profile("cmd", "command", options=argv)) == f"{missing} not installed"
    ok = {"argv": [sys.executable, "-c", "pass"]}
    assert why_unusable(Profile("cmd", "command", options=ok)) is None


def test_an_installed_cli_without_a_login_cannot_run(tmp_path: Path, no_keys: None) -> None:
    folder = tmp_path / "claude-home"
    folder.mkdir()
    prof = Profile("c", "claude", binary=sys.executable, config_dir=str(folder))
    assert why_unusable(prof) == f"not logged in ({folder})"
    assert choose_default({"c": prof}) == (
        "",
        f"no agent CLI can run: c: not logged in ({folder}) (see `baton doctor`)",
    )
    keyed = Profile(
        "k", "claude", binary=sys.executable, config_dir=str(folder), env={"ANTHROPIC_API_KEY": "x"}
    )
    assert why_unusable(keyed) is None
    assert choose_default({"c": prof, "k": keyed})[0] == "k"
