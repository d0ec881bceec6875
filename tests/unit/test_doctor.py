"""``baton doctor`` against a fake PATH of small scripts that print versions (real processes)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from baton.cli import doctor, main
from baton.cli.doctor import check_clis, check_profile, run_doctor, version_of
from baton.config.profiles import Profile, default_profiles

KEYS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
)


@pytest.fixture(autouse=True)
def _no_accounts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No key or account folder of the machine running the tests may leak in."""
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def script(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def fakebin(tmp_path: Path) -> Path:
    """claude answers its version; codex is broken; the others are not installed."""
    bindir = tmp_path / "bin"
    script(bindir, "claude", 'echo "2.1.197 (Claude Code)"')
    script(bindir, "codex", 'echo "error: missing platform package" >&2; exit 3')
    return bindir


def test_clis_on_path_with_versions_and_advice(fakebin: Path) -> None:
    checks = {c.provider: c for c in check_clis(str(fakebin))}
    claude, codex = checks["claude"], checks["codex"]
    assert claude.ok and claude.version == "2.1.197 (Claude Code)"
    assert claude.path == str(fakebin / "claude")
    assert not codex.ok and codex.path == str(fakebin / "codex")
    assert codex.error and "exit code 3" in codex.error and "missing platform" in codex.error
    assert codex.advice and "npm install -g @openai/codex" in codex.advice
    missing = [c for c in checks.values() if c.path is None]
    assert missing and all(c.advice and "not on PATH" in c.advice for c in missing)
    assert "npm install -g opencode-ai" in str(checks["opencode"].advice)


def test_a_hanging_cli_is_cut_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor, "VERSION_TIMEOUT", 0.3)
    sleep = shutil.which("sleep")
    assert sleep
    # The launcher's child keeps stdout open: the whole group must be killed.
    hang = script(tmp_path / "bin", "claude", f"{sleep} 30 &\nexec {sleep} 30")
    version, error = version_of(str(hang))
    assert version is None and error and "did not answer within 0.3 s" in error


def test_profile_account_folder_and_login(fakebin: Path, tmp_path: Path) -> None:
    account = tmp_path / "accounts" / "work"
    profile = Profile(
        name="work", provider="claude", binary=str(fakebin / "claude"), config_dir=str(account)
    )
    check = check_profile(profile)
    assert check.binary == str(fakebin / "claude") and check.version == "2.1.197 (Claude Code)"
    assert check.folder == str(account) and check.folder_exists is False
    assert not check.ok and "does not exist" in check.problems[0]
    assert "/login" in check.problems[0]

    account.mkdir(parents=True)
    check = check_profile(profile)
    assert check.folder_exists and check.logged_in is False
    assert "no login or API key" in check.problems[0]

    (account / ".credentials.json").write_text("{}")
    check = check_profile(profile)
    assert check.ok and check.logged_in and check.login.endswith(".credentials.json")


def test_profile_key_in_env_counts_as_login(fakebin: Path, tmp_path: Path) -> None:
    (tmp_path / "acct").mkdir()
    profile = Profile(
        name="k",
        provider="claude",
        binary=str(fakebin / "claude"),
        env={"ANTHROPIC_API_KEY": "sk-test"},
        config_dir=str(tmp_path / "acct"),
    )
    check = check_profile(profile)
    assert check.ok and check.login == "key in $ANTHROPIC_API_KEY"
    assert "sk-test" not in json.dumps(run_doctor({"k": profile}, str(fakebin)).to_json())


def test_codex_custom_provider_key(tmp_path: Path) -> None:
    home = tmp_path / "codexhome"
    home.mkdir()
    (home / "config.toml").write_text(
        'model_provider = "mock"\n[model_providers.mock]\nenv_key = "MOCK_API_KEY"\n'
    )
    ok_codex = script(tmp_path / "bin2", "codex", 'echo "codex-cli 0.171.0"')
    profile = Profile(
        name="c",
        provider="codex",
        binary=str(ok_codex),
        env={"MOCK_API_KEY": "x"},
        config_dir=str(home),
    )
    check = check_profile(profile)
    assert check.ok and "MOCK_API_KEY" in check.login and check.version == "codex-cli 0.171.0"
    profile.env = {}
    assert check_profile(profile).logged_in is False


def test_missing_and_broken_binaries(fakebin: Path) -> None:
    gone = check_profile(Profile(name="g", provider="claude", binary="/nowhere/claude"))
    assert not gone.ok and "npm install -g @anthropic-ai/claude-code" in gone.problems[0]
    broken = check_profile(Profile(name="b", provider="codex", binary=str(fakebin / "codex")))
    assert not broken.ok and "exit code 3" in broken.problems[0]
    on_path = check_profile(Profile(name="p", provider="codex"), path=str(fakebin))
    assert on_path.binary == str(fakebin / "codex")
    cmd = Profile(name="fmt", provider="command", options={"argv": ["nosuchtool-xyz", "{files}"]})
    assert "not installed" in check_profile(cmd, path=str(fakebin)).problems[0]
    fake = check_profile(default_profiles(str(fakebin))["fake"])
    assert fake.ok and fake.version and fake.version.startswith("Python")


def test_baton_doctor_json(
    fakebin: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    os.remove(fakebin / "codex")
    monkeypatch.setenv("PATH", str(fakebin))
    assert main(["doctor", "--json"]) == 1  # the discovered claude profile has no login
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["path"] == [str(fakebin)]
    clis = {c["provider"]: c for c in report["clis"]}
    assert clis["claude"]["version"] == "2.1.197 (Claude Code)" and clis["codex"]["path"] is None
    profiles = {p["name"]: p for p in report["profiles"]}
    assert set(profiles) == {"fake", "claude"}
    assert profiles["claude"]["folder"] == str(tmp_path / "home" / ".claude")

    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    assert main(["doctor"]) == 0
    text = capsys.readouterr().out
    assert "2.1.197 (Claude Code)" in text and "npm install -g @openai/codex" in text
    assert "All profiles can run." in text


def test_default_profiles_discover_clis_on_path(fakebin: Path) -> None:
    profiles = default_profiles(str(fakebin))
    assert profiles["claude"].binary == str(fakebin / "claude")
    assert profiles["codex"].provider == "codex" and profiles["fake"].provider == "fake"
    assert "opencode" not in profiles
    assert set(default_profiles(str(fakebin / "empty"))) == {"fake"}
    assert sys.executable == profiles["fake"].binary
