"""Known misconfigurations of agent CLIs: found by doctor and refused before launch (issue 16).

Real files and folders, fake CLI scripts on a private PATH; nothing starts an agent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from baton.agents import codex, preflight
from baton.agents.base import Turn
from baton.agents.codex import CodexAdapter, retry_bounds
from baton.cli import main
from baton.cli.doctor import format_report, run_doctor
from baton.config.profiles import Profile

KEYS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
    "CODEX_HOME",
)


@pytest.fixture(autouse=True)
def _no_accounts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BATON_CONFIG", str(tmp_path / "user-config.toml"))


def cli(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\necho 'codex-cli 0.171.0'\n")
    path.chmod(0o755)
    return path


def logged_in_codex(home: Path) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    (home / "auth.json").write_text("{}")
    return home


def test_codex_home_in_the_temp_folder_is_a_problem_for_doctor(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    bad = logged_in_codex(tmp / "codex-home")
    binary = cli(tmp_path / "bin", "codex")
    profile = Profile(
        name="cx",
        provider="codex",
        binary=str(binary),
        config_dir=str(bad),
        env={"TMPDIR": str(tmp)},
    )
    report = run_doctor({"cx": profile}, str(tmp_path / "bin"))
    (check,) = report.profiles
    assert not check.ok
    assert any("refuses to create its helper binaries" in p for p in check.problems)
    assert not report.ok  # the only real worker cannot run
    assert "helper binaries" in format_report(report)

    good = logged_in_codex(tmp_path / "codex-home")
    profile.config_dir = str(good)
    report = run_doctor({"cx": profile}, str(tmp_path / "bin"))
    assert report.ok and report.default == "cx", report.profiles[0].problems


def test_codex_home_in_the_temp_folder_is_refused_before_launch(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    profile = Profile(
        name="cx",
        provider="codex",
        config_dir=str(tmp / "codex-home"),
        env={"TMPDIR": str(tmp)},
    )
    turn = Turn(task_id="t", prompt="p", cwd=str(tmp_path))
    with pytest.raises(preflight.Misconfigured, match="move the profile's config_dir"):
        CodexAdapter().launch(turn, profile)


def test_codex_retries_of_a_configured_provider_are_bounded(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    home.mkdir()
    (home / "config.toml").write_text(
        'model_provider = "mock"\n[model_providers.mock]\nname = "m"\nstream_max_retries = 3\n'
    )
    assert retry_bounds(home, 1) == ["-c", "model_providers.mock.request_max_retries=1"]
    (home / "config.toml").write_text('model = "gpt-5"\n')  # the built-in provider: untouched
    assert retry_bounds(home, 1) == []
    (home / "config.toml").write_text('model_provider = "mock"\n[model_providers.mock]\nname="m"\n')
    profile = Profile(name="cx", provider="codex", config_dir=str(home), env={"TMPDIR": "/nowhere"})
    launch = CodexAdapter().launch(Turn(task_id="t", prompt="p", cwd=str(tmp_path)), profile)
    joined = " ".join(launch.argv)
    assert f"model_providers.mock.request_max_retries={codex.MAX_RETRIES}" in joined
    assert f"model_providers.mock.stream_max_retries={codex.MAX_RETRIES}" in joined


def test_gemini_under_a_folder_it_distrusts_is_noted_with_what_baton_does(tmp_path: Path) -> None:
    state = tmp_path / "state"  # under the temp folder: Gemini skips system settings here
    state.mkdir()
    profile = Profile(name="g", provider="gemini", env={"GEMINI_API_KEY": "k"})
    found = preflight.check(profile, dict(os.environ), state)
    assert found.problems == []
    (note,) = found.notes
    assert "private GEMINI_CLI_HOME" in note and str(state) in note


def test_doctor_reads_the_users_profiles_and_fails_without_a_real_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bindir = tmp_path / "bin"
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # the account below is not in it
    bindir.mkdir()
    monkeypatch.chdir(tmp_path)
    # Nothing installed: the fake agent is there, but it never counts as a real worker.
    assert main(["doctor", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["default"] is None
    assert "no agent CLI is installed" in report["default_reason"]

    # The user's own profile, with its own account folder and login, is checked and chosen.
    binary = cli(bindir, "codex")
    home = logged_in_codex(tmp_path / "work-codex")
    (tmp_path / "user-config.toml").write_text(
        f'[profiles.codex-work]\nprovider = "codex"\nbinary = "{binary}"\nconfig_dir = "{home}"\n'
    )
    assert main(["doctor", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    profiles = {p["name"]: p for p in report["profiles"]}
    assert profiles["codex-work"]["ok"] and profiles["codex-work"]["folder"] == str(home)
    assert report["default"] == "codex-work" and "auth.json" in report["default_reason"]
