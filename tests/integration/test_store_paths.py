"""Where the state lives: BATON_HOME, then XDG_STATE_HOME, then ~/.local/state."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from baton.store import db_path, runtime_dir, state_home, task_dir, tasks_dir, worktrees_dir


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("BATON_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_baton_home_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BATON_HOME", str(tmp_path / "bh"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    home = state_home()
    assert home == tmp_path / "bh"
    assert home.is_dir() and mode(home) == 0o700
    assert not (tmp_path / "xdg").exists()


def test_xdg_state_home_next(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    home = state_home()
    assert home == tmp_path / "xdg" / "baton"
    assert mode(home) == 0o700


def test_default_under_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BATON_HOME", "")  # empty counts as unset
    monkeypatch.setenv("XDG_STATE_HOME", "relative/dir")  # relative is ignored, per XDG
    home = state_home()
    assert home == tmp_path / "home" / ".local" / "state" / "baton"
    assert mode(home) == 0o700


def test_existing_home_is_left_as_is(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    existing = tmp_path / "mine"
    existing.mkdir(mode=0o755)
    existing.chmod(0o755)
    monkeypatch.setenv("BATON_HOME", str(existing))
    assert state_home() == existing
    assert mode(existing) == 0o755


def test_derived_paths(tmp_path: Path) -> None:
    assert db_path(tmp_path) == tmp_path / "baton.db"
    assert tasks_dir(tmp_path) == tmp_path / "tasks"
    assert task_dir(tmp_path, "abc") == tmp_path / "tasks" / "abc"
    assert worktrees_dir(tmp_path) == tmp_path / "worktrees"


def test_runtime_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert runtime_dir(tmp_path / "h") == tmp_path / "h" / "run"
    assert mode(tmp_path / "h" / "run") == 0o700
    monkeypatch.setenv("BATON_HOME", str(tmp_path / "bh"))
    assert runtime_dir() == tmp_path / "bh" / "run"
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "xrd"))
    assert runtime_dir() == tmp_path / "xrd" / "baton"
    assert mode(tmp_path / "xrd" / "baton") == 0o700
