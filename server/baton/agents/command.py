"""Any command line as a worker (provider ``command``): formatters, codemods, scripts.

The profile gives ``options["argv"]``, a list in which these placeholders are expanded:

* an element that is exactly ``{files}`` becomes the task's target files, one argument each;
* ``{prompt}`` inside an element is replaced by the prompt (the element stays one argument);
* ``{prompt_file}`` inside an element is replaced by the path of a file holding the prompt.

``options["stdin"] = "prompt"`` also feeds the prompt on stdin. Each stdout line becomes a
text event. A command has no stream end marker, so — unlike every agent adapter — its exit
code is its only signal: exit 0 is success (the final text is the tail of stdout), anything
else is a ``worker_error`` carrying the tail of stderr.
"""

from __future__ import annotations

from collections import deque

from baton.agents.base import AgentNotFound, Launch, Turn
from baton.agents.fake import write_prompt
from baton.config.profiles import Profile
from baton.core import events
from baton.core.events import Event, EventType

#: How much of stdout the final text keeps.
TAIL_CHARS = 4000


def expand_argv(template: list[str], turn: Turn) -> list[str]:
    """``template`` with ``{files}``, ``{prompt}`` and ``{prompt_file}`` filled in."""
    return _expand(template, turn)[0]


def _expand(template: list[str], turn: Turn) -> tuple[list[str], str | None]:
    """The expanded argv and the prompt file it names (None when it names none)."""
    argv: list[str] = []
    prompt_file: str | None = None
    for arg in template:
        if arg == "{files}":
            argv.extend(turn.files)
            continue
        if "{prompt_file}" in arg:
            if prompt_file is None:
                prompt_file = str(write_prompt(turn))
            arg = arg.replace("{prompt_file}", prompt_file)
        argv.append(arg.replace("{prompt}", turn.prompt))
    return argv, prompt_file


class CommandParser:
    """Stdout lines → text events; the exit code decides how it ended."""

    def __init__(self) -> None:
        self._tail: deque[str] = deque()
        self._tail_len = 0

    def feed(self, line: str) -> list[Event]:
        self._tail.append(line)
        self._tail_len += len(line) + 1
        while self._tail_len > TAIL_CHARS and len(self._tail) > 1:
            self._tail_len -= len(self._tail.popleft()) + 1
        return [events.text(line + "\n", delta=True)]

    def finish(self, exit_code: int | None, stderr_tail: str) -> list[Event]:
        if exit_code == 0:
            return [Event(EventType.FINAL, {"text": "\n".join(self._tail)[-TAIL_CHARS:]})]
        how = f"exited with code {exit_code}" if exit_code is not None else "vanished"
        message = f"the command {how}"
        if stderr_tail.strip():
            message += f": {stderr_tail.strip()}"
        return [events.error("worker_error", message, exit_code=exit_code)]


class CommandAdapter:
    """Provider ``command``: runs ``profile.options["argv"]`` once per turn."""

    provider = "command"

    def launch(self, turn: Turn, profile: Profile) -> Launch:
        template = profile.options.get("argv")
        if not isinstance(template, list) or not template:
            raise AgentNotFound(
                f"profile {profile.name!r} (provider command) needs options.argv, a non-empty "
                'list such as ["ruff", "format", "{files}"]'
            )
        argv, prompt_file = _expand([str(a) for a in template], turn)
        stdin = turn.prompt if profile.options.get("stdin") == "prompt" else None
        readable = (prompt_file,) if prompt_file else ()
        return Launch(
            argv=argv, env=dict(profile.env), cwd=turn.cwd, stdin=stdin, readable=readable
        )

    def parser(self) -> CommandParser:
        return CommandParser()
