"""The project's metadata is complete and says the same everywhere.

``[project.urls]`` in pyproject.toml is the one place the repository's address is written
down; the VS Code manifest, the Neovim rockspec, the vimdoc and the READMEs must name the same
repository (a placeholder changed in one place only is caught here). One version, from
``baton.__version__``, for the Python distribution and the VS Code extension.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import baton

REPO = Path(__file__).resolve().parents[2]
PYPROJECT: dict[str, Any] = tomllib.loads((REPO / "pyproject.toml").read_text())
PROJECT: dict[str, Any] = PYPROJECT["project"]
URLS: dict[str, str] = PROJECT["urls"]
URL = URLS["Repository"]
SLUG = URL.removeprefix("https://github.com/")  # owner/name
MANIFEST: dict[str, Any] = json.loads((REPO / "clients/vscode/package.json").read_text())
ROCKSPEC = REPO / "clients/neovim/baton.nvim-scm-1.rockspec"
#: Every file a user reads the repository's address in.
NAMING_THE_REPOSITORY = [
    "README.md",
    "clients/neovim/README.md",
    "clients/neovim/doc/baton.txt",
    "clients/neovim/baton.nvim-scm-1.rockspec",
    "clients/vscode/package.json",
    "clients/vscode/README.md",
    "pyproject.toml",
]


def test_pyproject_metadata_is_complete() -> None:
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", URL), URL
    assert {"Homepage", "Repository", "Documentation", "Issues"} <= URLS.keys()
    assert URLS["Issues"] == f"{URL}/issues"
    for name, url in URLS.items():
        assert url == URL or url.startswith(URL + "/"), (name, url)
    assert PROJECT["license"] == "MIT" and (REPO / "LICENSE").read_text().startswith("MIT")
    assert PROJECT["readme"] == "README.md"
    assert len(PROJECT["keywords"]) >= 5
    classifiers = PROJECT["classifiers"]
    assert any(c.startswith("Development Status ::") for c in classifiers)
    assert any(c.startswith("Programming Language :: Python :: 3.") for c in classifiers)
    assert "Typing :: Typed" in classifiers and (REPO / "server/baton/py.typed").exists()
    # the supported Pythons are the ones requires-python allows, and the floor is listed
    floor = PROJECT["requires-python"].removeprefix(">=")
    assert f"Programming Language :: Python :: {floor}" in classifiers


def test_the_version_has_one_source() -> None:
    assert PROJECT["dynamic"] == ["version"] and "version" not in PROJECT
    assert PYPROJECT["tool"]["hatch"]["version"]["path"] == "server/baton/__init__.py"
    assert re.fullmatch(r"\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?", baton.__version__)
    assert MANIFEST["version"] == baton.__version__  # the extension ships with its server
    changelog = (REPO / "clients/vscode/CHANGELOG.md").read_text()
    assert re.search(r"^## (\S+)", changelog, re.M)[1] == baton.__version__  # type: ignore[index]


def test_the_vscode_manifest_names_the_repository() -> None:
    assert MANIFEST["repository"]["url"] == URL
    assert MANIFEST["repository"]["directory"] == "clients/vscode"
    assert MANIFEST["homepage"].startswith(f"{URL}/tree/main/clients/vscode")
    assert MANIFEST["bugs"]["url"] == URLS["Issues"]
    assert MANIFEST["license"] == PROJECT["license"]


def test_the_rockspec_names_the_repository() -> None:
    text = ROCKSPEC.read_text()
    assert f"url = 'git+{URL}'" in text
    assert f"homepage = '{URL}'" in text
    assert f"license = '{PROJECT['license']}'" in text


def test_every_place_names_the_same_repository() -> None:
    seen = {}
    for rel in NAMING_THE_REPOSITORY:
        text = (REPO / rel).read_text()
        found = re.findall(r"github\.com/([\w.-]+/[\w.-]+)", text)
        named = {n.rstrip(".").removesuffix(".git") for n in found}  # a sentence's full stop
        # lazy.nvim and vim.pack specs name it short: { 'owner/name', ... }
        named |= set(re.findall(r"\{\s*'([\w.-]+/[\w.-]+)'", text))
        seen[rel] = named
        assert named <= {SLUG}, f"{rel} names {named - {SLUG}}, not {SLUG}"
    # the user-facing places do name it (so the check above checked something)
    for rel in ("README.md", "clients/neovim/README.md", "clients/neovim/doc/baton.txt"):
        assert seen[rel] == {SLUG}, rel
    assert URL in (REPO / "README.md").read_text()
    assert URL in (REPO / "clients/neovim/doc/baton.txt").read_text()


def test_the_rockspec_builds_every_lua_module_of_the_plugin() -> None:
    """A module the rockspec does not name is missing from the built rock (``baton.plan``
    was, and ``baton.ask`` and ``baton.dashboard`` before it)."""
    lua = REPO / "clients/neovim/lua"
    files = {
        ".".join(p.relative_to(lua).with_suffix("").parts).removesuffix(".init"): p
        for p in lua.rglob("*.lua")
    }
    named = dict(re.findall(r"\['([\w.]+)'\] = '(lua/[\w/]+\.lua)'", ROCKSPEC.read_text()))
    assert set(named) == set(files)
    for module, path in named.items():
        assert (REPO / "clients/neovim" / path) == files[module], module
