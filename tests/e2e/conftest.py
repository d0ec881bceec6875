"""Fixtures of the end-to-end tests in real editors: code-server for the VS Code client (its
harness is tests/e2e/vscode_support/workbench.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.vscode_support.workbench import APP, Tools, VSCode, installed, packaged


@pytest.fixture(scope="module")
def tools() -> Tools:
    """Install (or find cached) everything; fail loudly when something cannot be installed."""
    return installed()


@pytest.fixture(scope="module")
def vsix(tools: Tools) -> Path:
    """The extension built and packaged by its own build (`npm run package`: esbuild + vsce)."""
    return packaged(tools)


@pytest.fixture
def vscode(tools: Tools, vsix: Path, repo: Path, baton_home: Path, tmp_path: Path) -> VSCode:
    """code-server for this test, on the fixture repository (app.py as the drivers expect)."""
    assert (repo / "app.py").read_text() == APP
    return VSCode(tools, vsix, repo, baton_home, tmp_path)
