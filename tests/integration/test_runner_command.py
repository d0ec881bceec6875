"""The command adapter running a real command as a detached worker."""

from __future__ import annotations

import sys
from pathlib import Path

from baton.agents.base import Turn
from baton.agents.command import CommandAdapter
from baton.config.profiles import Profile
from baton.core.outcome import Outcome
from baton.process.spawn import run_attempt

UPPERCASE = (
    "import sys\n"
    "for name in sys.argv[1:]:\n"
    "    with open(name) as f: text = f.read()\n"
    "    with open(name, 'w') as f: f.write(text.upper())\n"
    "    print('uppercased', name)\n"
    "if not sys.argv[1:]:\n"
    "    sys.exit('no files given')\n"
)


async def run(tmp_path: Path, files: tuple[str, ...]) -> Outcome:
    turn = Turn(
        task_id="t",
        prompt="shout",
        cwd=str(tmp_path),
        files=files,
        task_dir=str(tmp_path / ".task"),
    )
    profile = Profile(
        "upper", "command", options={"argv": [sys.executable, "-c", UPPERCASE, "{files}"]}
    )
    adapter = CommandAdapter()
    result = await run_attempt(
        adapter.launch(turn, profile), adapter.parser(), tmp_path / ".task", 1
    )
    out = Outcome()
    for e in result.events:
        out.observe(e)
    return out


async def test_a_real_command_changes_the_files_it_gets(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    (tmp_path / "b c.txt").write_text("world\n")
    out = await run(tmp_path, ("a.txt", "b c.txt"))
    assert (tmp_path / "a.txt").read_text() == "HELLO\n"
    assert (tmp_path / "b c.txt").read_text() == "WORLD\n"
    assert out.completion.value == "completed"
    assert out.final == "uppercased a.txt\nuppercased b c.txt"


async def test_a_failing_command_is_a_worker_error_with_stderr(tmp_path: Path) -> None:
    out = await run(tmp_path, ())
    assert out.completion.value == "worker_error"
    assert "code 1" in out.error_message and "no files given" in out.error_message
