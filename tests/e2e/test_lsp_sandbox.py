"""``baton/status`` (and the ``baton.status`` command) tell the editor how agents run here:
sandboxed, unsandboxed (``sandbox = "auto"`` without a working sandbox, or ``"off"``) or
refused (``"require"`` without one), with what to do about it — what the VS Code status bar
and the Neovim statusline show. A real ``baton lsp``; a ``bwrap`` on ``PATH`` that cannot
start stands for a machine where no sandbox works.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from baton.process.sandbox import status
from tests.conftest import user_config
from tests.e2e.lsp_support import Session, start, stop, wait_for


async def sandbox_of(
    repo: Path, baton_home: Path, editor: str = "visual-studio-code"
) -> tuple[dict[str, Any], Session]:
    """The ``sandbox`` of the ``baton.status`` answer, and the session (to stop)."""
    lsp = await start(editor, repo, baton_home)
    try:
        answer = await lsp.status()
        await wait_for(lambda: lsp.rec.status, what="a baton/status notification")
    except BaseException:
        await stop(lsp)
        raise
    assert lsp.rec.status[-1]["sandbox"] == answer["sandbox"]  # the notification says it too
    return answer["sandbox"], lsp


def broken_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``bwrap`` first on ``PATH`` that cannot create a sandbox (as where user namespaces
    are not allowed)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = folder / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")


@pytest.mark.skipif(not status().works, reason=f"no sandbox can run here: {status().why}")
async def test_agents_sandboxed_by_default(repo: Path, baton_home: Path) -> None:
    found, lsp = await sandbox_of(repo, baton_home, "neovim@v0.11.0")
    await stop(lsp)
    assert found["agents"] == "sandboxed" and found["setting"] == "auto", found
    assert found["kind"] == "bubblewrap" and found["version"] and found["advice"] == ""


async def test_sandbox_off_says_agents_run_unsandboxed(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    user_config(tmp_path, 'sandbox = "off"\n')
    found, lsp = await sandbox_of(repo, baton_home)
    await stop(lsp)
    assert found["agents"] == "unsandboxed" and found["setting"] == "off", found
    assert 'Remove sandbox = "off"' in found["advice"]
    assert "agents run unsandboxed" in found["summary"]


async def test_no_working_sandbox_unsandboxed_under_auto_refused_under_require(
    repo: Path, baton_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken_bwrap(tmp_path, monkeypatch)
    found, lsp = await sandbox_of(repo, baton_home)
    await stop(lsp)
    assert found["agents"] == "unsandboxed" and found["setting"] == "auto", found
    assert "No permissions to create new namespace" in found["why"]
    assert 'set sandbox = "require"' in found["advice"]
    user_config(tmp_path, 'sandbox = "require"\n')
    found, lsp = await sandbox_of(repo, baton_home)
    await stop(lsp)
    assert found["agents"] == "refused" and found["setting"] == "require", found
    assert "REFUSED" in found["summary"] and 'set sandbox = "auto"' in found["advice"]


async def test_the_status_follows_an_edit_of_the_user_config(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    """Set ``sandbox = "off"`` while the editor runs: ``baton/status`` says it with no task
    event (the broker re-reads the changed file), and again once it is removed."""
    before, lsp = await sandbox_of(repo, baton_home)
    try:
        user_config(tmp_path, 'sandbox = "off"\n')
        await wait_for(
            lambda: lsp.rec.status[-1]["sandbox"]["setting"] == "off",
            timeout=30,
            what="baton/status after the user config changed",
        )
        assert lsp.rec.status[-1]["sandbox"]["agents"] == "unsandboxed"
        user_config(tmp_path, "")
        await wait_for(
            lambda: lsp.rec.status[-1]["sandbox"] == before,
            timeout=30,
            what="baton/status after the setting was removed",
        )
    finally:
        await stop(lsp)
