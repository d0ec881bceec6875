"""``baton init`` writes a commented user config that loads, with the default worker found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baton.cli import main
from baton.config.settings import load_settings


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH with claude and codex (scripts), a HOME with no account, a user config path."""
    for key in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "CODEX_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(var, raising=False)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("claude", "codex"):
        (bindir / name).write_text("#!/bin/sh\necho 1.0\n")
        (bindir / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BATON_CONFIG", str(tmp_path / "cfg" / "config.toml"))
    return tmp_path


def test_init_writes_a_config_naming_the_logged_in_cli(
    machine: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    codex_home = machine / "home" / ".codex"
    codex_home.mkdir(parents=True)
    (codex_home / "auth.json").write_text("{}")
    assert main(["init", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    path = machine / "cfg" / "config.toml"
    text = path.read_text()
    assert doc["path"] == str(path) and doc["default"] == "codex"
    assert 'default_worker = "codex"' in text and "[profiles.claude]" in text
    assert "# not logged in yet: run `claude` once" in text  # says how, chooses nothing
    settings = load_settings(None)
    assert settings.default_worker == "codex"
    assert settings.provenance["default_worker"].layer == "user"
    assert main(["init"]) == 1  # an existing config is kept
    assert "baton init --force" in capsys.readouterr().err
    assert path.read_text() == text


def test_init_with_nothing_usable_chooses_nothing(
    machine: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init"]) == 0
    text = (machine / "cfg" / "config.toml").read_text()
    assert "\ndefault_worker" not in text and '# default_worker = "claude"' in text
    assert load_settings(None).default_worker == ""
    assert "no default worker yet" in capsys.readouterr().out
