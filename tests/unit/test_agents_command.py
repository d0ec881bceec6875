"""The command adapter: argv placeholders and exit-code judgement."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.agents.base import AgentNotFound, Turn
from baton.agents.command import TAIL_CHARS, CommandAdapter, CommandParser, expand_argv
from baton.config.profiles import Profile
from baton.core.events import EventType


def turn(tmp_path: Path) -> Turn:
    return Turn(
        task_id="t",
        prompt="fix it; $(rm -rf ~)",
        cwd=str(tmp_path),
        files=("a.py", "b c.py"),
        task_dir=str(tmp_path / "task"),
    )


def test_placeholders_expand_to_separate_arguments(tmp_path: Path) -> None:
    argv = expand_argv(
        ["tool", "{files}", "--msg={prompt}", "{prompt_file}", "{files}x"], turn(tmp_path)
    )
    assert argv[:4] == ["tool", "a.py", "b c.py", "--msg=fix it; $(rm -rf ~)"]
    assert Path(argv[4]).read_text() == "fix it; $(rm -rf ~)"
    assert argv[5] == "{files}x"  # only a whole {files} element expands


def test_launch_uses_options_argv_env_and_stdin(tmp_path: Path) -> None:
    profile = Profile(
        "fmt", "command", env={"A": "1"}, options={"argv": ["fmt", "{files}"], "stdin": "prompt"}
    )
    launch = CommandAdapter().launch(turn(tmp_path), profile)
    assert launch.argv == ["fmt", "a.py", "b c.py"]
    assert launch.env == {"A": "1"} and launch.stdin == "fix it; $(rm -rf ~)"
    assert launch.cwd == str(tmp_path)


@pytest.mark.parametrize("options", [{}, {"argv": []}, {"argv": "ruff format"}])
def test_launch_without_argv_says_what_is_missing(
    tmp_path: Path, options: dict[str, object]
) -> None:
    with pytest.raises(AgentNotFound, match=r"options\.argv"):
        CommandAdapter().launch(turn(tmp_path), Profile("fmt", "command", options=options))


def test_stdout_lines_are_text_and_exit_zero_is_final() -> None:
    parser = CommandParser()
    (e,) = parser.feed("formatted 2 files")
    assert (e.type, e.data) == (EventType.TEXT, {"text": "formatted 2 files\n", "delta": True})
    parser.feed("done")
    (final,) = parser.finish(0, "ignored warning")
    assert (final.type, final.data) == (EventType.FINAL, {"text": "formatted 2 files\ndone"})


def test_final_keeps_only_the_tail_of_a_long_stdout() -> None:
    parser = CommandParser()
    for i in range(2000):
        parser.feed(f"line {i}")
    (final,) = parser.finish(0, "")
    assert len(final.data["text"]) <= TAIL_CHARS and final.data["text"].endswith("line 1999")


def test_non_zero_exit_is_a_worker_error_with_the_stderr_tail() -> None:
    (e,) = CommandParser().finish(2, "error: bad input\n")
    assert e.type == EventType.ERROR and e.data["kind"] == "worker_error"
    assert "code 2" in e.data["message"] and "bad input" in e.data["message"]
    (e,) = CommandParser().finish(None, "")
    assert "vanished" in e.data["message"]
