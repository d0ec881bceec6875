"""Reasoning effort reaches the CLIs that take one, each in its own spelling, and is named
as ignored for the others."""

from __future__ import annotations

from baton.agents import effort
from baton.agents.base import Turn
from baton.agents.claude import ClaudeAdapter
from baton.agents.codex import CodexAdapter
from baton.agents.gemini import GeminiAdapter
from baton.config.profiles import Profile


def _turn(level: str | None) -> Turn:
    return Turn(task_id="t", prompt="go", cwd="/w", effort=level)


def test_claude_code_takes_every_level_as_its_effort_flag() -> None:
    for level in effort.LEVELS:
        argv = ClaudeAdapter().launch(_turn(level), Profile("c", "claude")).argv
        assert argv[argv.index("--effort") + 1] == level
    assert "--effort" not in ClaudeAdapter().launch(_turn(None), Profile("c", "claude")).argv


def test_codex_takes_it_as_model_reasoning_effort_max_as_xhigh() -> None:
    profile = Profile("c", "codex", options={"config": {"model_reasoning_effort": '"low"'}})
    argv = CodexAdapter().launch(_turn("high"), profile).argv
    # After the profile's own setting, so the task's wins.
    assert argv.index('model_reasoning_effort="high"') > argv.index('model_reasoning_effort="low"')
    argv = CodexAdapter().launch(_turn("max"), Profile("c", "codex")).argv
    assert 'model_reasoning_effort="xhigh"' in argv
    assert not [a for a in CodexAdapter().launch(_turn(None), Profile("c", "codex")).argv
                if "reasoning" in a]  # fmt: skip


def test_the_others_ignore_it_and_say_so() -> None:
    argv = GeminiAdapter().launch(_turn("high"), Profile("g", "gemini")).argv
    assert not [a for a in argv if "effort" in a]
    assert effort.ignored("gemini", "high") == (
        "effort high ignored: the gemini CLI has no reasoning-effort option"
    )
    assert effort.ignored("claude", "high") is None and effort.ignored("fake", None) is None
