"""``baton love``'s edit of a config file: the keys set in place, added after the last key of
their table or removed, every other line kept byte for byte; an edit that cannot be made
safely is refused and writes nothing."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from baton.config.layers import ConfigError
from baton.config.writing import edited, set_keys

PROJECT = """\
# the team's Baton settings
default_worker = "claude"   # the usual one
only = ["claude", "codex"]

[profiles.codex]
provider = "codex"
"""


def test_a_key_is_replaced_in_place_and_a_new_one_goes_after_the_last_key() -> None:
    out = edited(PROJECT, {"default_worker": "codex", "default_model": "gpt-5.5"})
    assert out == PROJECT.replace(
        'default_worker = "claude"   # the usual one\nonly = ["claude", "codex"]\n',
        'default_worker = "codex"\nonly = ["claude", "codex"]\ndefault_model = "gpt-5.5"\n',
    )


def test_cleared_keys_are_removed_and_absent_ones_ignored() -> None:
    out = edited(PROJECT, {"default_worker": None, "default_model": None})
    assert out == PROJECT.replace('default_worker = "claude"   # the usual one\n', "")
    assert edited("", {"default_worker": None}) == ""
    assert edited("", {"default_worker": "pi"}) == 'default_worker = "pi"\n'


def test_the_tool_baton_table_of_a_pyproject() -> None:
    pyproject = (
        '[project]\nname = "x"\n\n[tool.baton]\nonly = ["a"]\n\n[tool.ruff]\nline-length = 100\n'
    )
    out = edited(pyproject, {"default_worker": "a"}, table="tool.baton")
    assert out == pyproject.replace('only = ["a"]\n', 'only = ["a"]\ndefault_worker = "a"\n')
    bare = '[project]\nname = "x"\n'
    assert edited(bare, {"default_worker": "a"}, table="tool.baton") == (
        bare + '\n[tool.baton]\ndefault_worker = "a"\n'
    )


def test_what_cannot_be_edited_safely_is_refused() -> None:
    with pytest.raises(ConfigError, match="not valid TOML"):
        edited("default_worker = \n", {"default_worker": "a"})
    multiline = 'default_worker = """\nclaude\n"""\n'
    with pytest.raises(ConfigError, match="by hand"):
        edited(multiline, {"default_worker": "a"})


def test_the_file_is_replaced_keeping_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(PROJECT)
    os.chmod(path, 0o600)
    assert set_keys(path, {"default_worker": "codex"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert 'default_worker = "codex"' in path.read_text()
    assert not set_keys(path, {"default_worker": "codex"})  # unchanged: not written
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]
    fresh = tmp_path / "new" / ".baton.toml"
    assert set_keys(fresh, {"default_worker": "pi", "default_model": None})
    assert fresh.read_text() == 'default_worker = "pi"\n'
