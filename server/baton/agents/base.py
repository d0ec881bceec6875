"""The adapter protocol: how Baton starts an agent CLI and reads what it says.

An adapter is declarative where it can be: ``launch`` builds argv/env for a first or a
resumed turn, and ``parser`` returns a fresh stateful parser for one attempt's output. How
the attempt ended is judged from the normalized events by :class:`baton.core.outcome.Outcome`,
never from the exit code alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from baton.config.profiles import Profile
from baton.core.events import Event
from baton.errors import Unavailable


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn to run: a first prompt, or a follow-up in an existing session."""

    task_id: str
    prompt: str  # the brief for a first turn; the reply / steer / repair text otherwise
    cwd: str  # the task's worktree
    reason: str = "first"  # first | reply | steer | retry | repair | handoff
    session_id: str | None = None  # resume this session when set
    model: str | None = None
    files: tuple[str, ...] = ()  # the task's target files, relative to cwd
    scope: tuple[str, ...] = ()
    task_dir: str = ""  # the task's private folder (for scripts, transcripts)
    sandbox: str = "auto"  # auto | require | off: the setting, as the runtime read it
    hide: tuple[str, ...] = ()  # state folders of the other accounts (the sandbox hides them)
    effort: str | None = None  # reasoning effort (baton.agents.effort), where the CLI has one
    read_only: bool = False  # the agent only answers: its checkout is mounted read-only


@dataclass(frozen=True, slots=True)
class Launch:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # added to a clean copy of os.environ
    cwd: str = ""
    stdin: str | None = None  # text fed on stdin; None = stdin from /dev/null
    unset_env: tuple[str, ...] = ()
    # What the agent needs beyond its working folder and its CLI's own state folders
    # (baton.agents.state), for the sandbox: files it reads (a prompt file in the task's
    # folder) and folders or files it writes.
    readable: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    # The argv to start instead when Baton's sandbox confines the agent (a CLI whose own
    # sandbox cannot nest inside it); None: ``argv`` either way.
    confined_argv: list[str] | None = None
    # What the task's log should say about this launch (a profile's worker_mcp, and what of
    # it the CLI could not do: lines starting "warning:").
    notes: tuple[str, ...] = ()


class Parser(Protocol):
    def feed(self, line: str) -> list[Event]:
        """Events for one line of the agent's stdout (without its newline)."""
        ...

    def finish(self, exit_code: int | None, stderr_tail: str) -> list[Event]:
        """Events once the process is gone (e.g. an error when no end marker came)."""
        ...


@runtime_checkable
class StderrReader(Protocol):
    """A parser that also reads the agent's stderr, line by line as it is written.

    For a CLI that says only there that it is failing and retrying (OpenCode logs each failed
    model request there and prints nothing on stdout): the runtime follows the stderr file of
    a parser of this kind too, and an error marked ``stop`` ends the attempt as from stdout.
    """

    def feed_stderr(self, line: str) -> list[Event]:
        """Events for one line of the agent's stderr (without its newline)."""
        ...


class Adapter(Protocol):
    provider: str

    def launch(self, turn: Turn, profile: Profile) -> Launch: ...

    def parser(self) -> Parser: ...


class AgentNotFound(Unavailable, RuntimeError):
    """The agent CLI a profile names is not installed or not executable."""
