"""``baton.dashboard``: the editor gets a one-time link to its broker's dashboard from the
language server, and the link opens the page (once)."""

from __future__ import annotations

import asyncio
import http.client
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.e2e.lsp_support import EDITORS, Session, start, stop


@pytest.fixture(params=EDITORS[:1])
async def lsp(
    request: pytest.FixtureRequest, repo: Path, baton_home: Path
) -> AsyncIterator[Session]:
    session = await start(request.param, repo, baton_home)
    yield session
    await stop(session)


def status_of(port: int, path: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path)
        res = conn.getresponse()
        res.read()
        return res.status
    finally:
        conn.close()


async def test_the_editor_gets_a_one_time_link(lsp: Session) -> None:
    first = await lsp.command("baton.dashboard")
    second = await lsp.command("baton.dashboard", {})
    assert first["port"] == second["port"] and first["url"] != second["url"]
    assert first["origin"] == f"http://127.0.0.1:{first['port']}" and first["actions"] is False
    parts = urlsplit(first["url"])
    path = f"{parts.path}?{parts.query}"
    assert await asyncio.to_thread(status_of, first["port"], path) == 303
    assert await asyncio.to_thread(status_of, first["port"], path) == 403  # used once
