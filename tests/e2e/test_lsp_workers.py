"""``baton.workers``: the editor lists the workers from the server — the user's and the
project's profiles as routing resolves them, each with whether it can run, and the default —
and its answer is the websocket's (``baton workers --json``) for the same folder."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.conftest import git, user_config
from tests.e2e.lsp_support import EDITORS, Session, start, stop
from tests.e2e.test_cli import as_json, baton


@pytest.fixture(params=EDITORS[:1])
async def lsp(
    request: pytest.FixtureRequest, repo: Path, baton_home: Path, tmp_path: Path
) -> AsyncIterator[Session]:
    missing = tmp_path / "no-such-claude"  # never installed, whatever this machine has
    user_config(
        tmp_path,
        'default_worker = "fake"\n'
        "[profiles.claude-work]\n"
        f'provider = "claude"\nmodel = "claude-sonnet-4-5"\nbinary = "{missing}"\n'
        "[profiles.off]\n"
        'provider = "fake"\nenabled = false\n',
    )
    (repo / ".baton.toml").write_text('[profiles.local]\nprovider = "fake"\nlabel = "mine"\n')
    git(repo, "add", ".baton.toml")
    git(repo, "commit", "-qm", "baton config")
    session = await start(request.param, repo, baton_home)
    yield session
    await stop(session)


async def test_workers_lists_the_users_and_the_projects_profiles(
    lsp: Session, repo: Path, tmp_path: Path
) -> None:
    doc = lsp.open("app.py")
    res = await lsp.command("baton.workers", {"uri": doc.uri})
    assert res["root"] == str(repo.resolve())
    assert res["default"] == "fake" and res["default_reason"]
    by_name = {w["name"]: w for w in res["workers"]}
    assert {"fake", "claude-work", "off", "local"} <= set(by_name)
    work = by_name["claude-work"]
    assert work["provider"] == "claude" and work["model"] == "claude-sonnet-4-5"
    assert work["source"] == "user" and work["can_run"] is False
    assert str(tmp_path / "no-such-claude") in work["problem"]
    assert by_name["local"]["source"] == "project" and by_name["local"]["can_run"] is True
    assert by_name["fake"]["can_run"] is True and "problem" not in by_name["fake"]
    assert by_name["off"]["enabled"] is False and by_name["off"]["problem"] == "disabled"

    # No argument: the first workspace folder, the same answer.
    assert await lsp.command("baton.workers") == res
    # The websocket's answer for the folder (the CLI asks the editor's broker) is the same.
    cli = await asyncio.to_thread(baton, "workers", "--json", "--cwd", str(repo), cwd=repo)
    assert as_json(cli) == res


async def test_workers_refuses_a_uri_that_is_not_a_file(lsp: Session) -> None:
    with pytest.raises(JsonRpcException, match="uri must be a file"):
        await lsp.command("baton.workers", {"uri": "untitled:Untitled-1"})
