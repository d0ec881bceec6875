"""One way to start, follow and interrupt an attempt, whichever way the agent is spoken to.

A :class:`Transport` is what the runtime holds for a task's session: ``start`` begins attempt
*n* of a turn and returns the :class:`ProcessRecord` to follow, ``parser`` reads that
attempt's output, ``interrupt`` stops the running turn. The native transport
(:class:`NativeTransport`) runs an agent CLI per attempt and parses its own stream; the ACP
transport (:class:`baton.acp.transport.AcpTransport`) keeps one runner per session and gives
it one prompt per attempt. Both write the same files (``attempt-<n>.out|.err|.exit``, see
:mod:`baton.process.spawn`), so following and adopting an attempt is the same for both.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from baton.agents import mcp_files
from baton.agents.base import Adapter, Launch, Parser, Turn
from baton.config.profiles import Profile
from baton.process.sandbox import Confinement, confine
from baton.process.spawn import ProcessRecord, agent_env, kill_tree, spawn

NATIVE = "native"
#: How a note for the task's log that is a warning starts.
WARNING = "warning:"
ACP = "acp"


@dataclass(frozen=True, slots=True)
class Started:
    """An attempt that was started: the process to follow, and how it was started."""

    record: ProcessRecord
    how: str = ""  # a note for the task's log ("" when there is nothing to say)
    warnings: tuple[str, ...] = ()  # for the task's log at warning level ("warning: …")


class Transport(Protocol):
    """How one provider's attempts are started and stopped (see the module's docstring)."""

    name: str  # NATIVE | ACP: stored on the attempt, so a later broker picks the same
    provider: str

    def parser(self) -> Parser:
        """A fresh parser for one attempt's output."""
        ...

    async def start(self, turn: Turn, profile: Profile, attempt: int) -> Started:
        """Start attempt ``attempt`` of ``turn``; its output goes to ``turn.task_dir``.

        Raises :class:`~baton.agents.base.AgentNotFound`, :class:`OSError`, :class:`KeyError`
        (no such transport for the provider) or :class:`ValueError` (the turn names no task
        folder) when it cannot start; nothing runs then.
        """
        ...

    async def interrupt(self, task_dir: Path, record: ProcessRecord, grace: float) -> None:
        """Stop the running turn of ``record``; returns once it is told (ACP) or gone."""
        ...


def started(record: ProcessRecord, launch: Launch, confinement: Confinement) -> Started:
    """``record`` with what the task's log says of it: the launch's notes and how it runs,
    and apart, at warning level, the notes that are warnings ("warning: …")."""
    notes = [n for n in (*launch.notes, confinement.note) if n]
    how = "; ".join(n for n in notes if not n.startswith(WARNING))
    warned = (*(n for n in notes if n.startswith(WARNING)), *confinement.warnings)
    return Started(record, how, tuple(dict.fromkeys(warned)))


def _paths(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(os.path.expanduser(str(v)) for v in value)


def confinement_for(launch: Launch, task_dir: Path, turn: Turn, profile: Profile) -> Confinement:
    """How ``launch`` of ``profile`` runs under the turn's ``sandbox`` setting (see
    :func:`baton.process.sandbox.confine`), with the paths the profile's ``options.sandbox``
    adds (``{read = [...], write = [...]}``) and the files of the MCP servers its CLI starts
    (:mod:`baton.agents.mcp_files`); raises ``SandboxUnavailable`` (an OSError)."""
    extra = profile.options.get("sandbox")
    if isinstance(extra, dict):  # more paths the profile's agent needs (user config only)
        launch = dataclasses.replace(
            launch,
            readable=(*launch.readable, *_paths(extra.get("read"))),
            writable=(*launch.writable, *_paths(extra.get("write"))),
        )
    env = agent_env(launch)
    return confine(
        launch,
        task_dir,
        env,
        provider=profile.provider,
        mode=turn.sandbox,
        network=profile.network != "none",
        hide=turn.hide,
        protect=(turn.cwd,) if turn.read_only else (),  # baton ask: its checkout read-only
        mcp=mcp_files.for_profile(profile, env, launch.cwd or turn.cwd),
    )


class NativeTransport:
    """An agent CLI per attempt, started detached through :func:`~baton.process.spawn.spawn`;
    its own output stream is parsed by the adapter's parser."""

    name = NATIVE

    def __init__(self, adapter: Adapter) -> None:
        self.adapter = adapter
        self.provider = adapter.provider

    def parser(self) -> Parser:
        return self.adapter.parser()

    async def start(self, turn: Turn, profile: Profile, attempt: int) -> Started:
        if not turn.task_dir:
            raise ValueError("a turn needs its task's folder to start an attempt")
        launch = self.adapter.launch(turn, profile)
        task_dir = Path(turn.task_dir)

        def confined_spawn() -> tuple[ProcessRecord, Confinement]:
            # The policy's paths are looked at in the thread that spawns: off the loop.
            confinement = confinement_for(launch, task_dir, turn, profile)
            return spawn(launch, task_dir, attempt, confinement), confinement

        record, confinement = await asyncio.to_thread(confined_spawn)
        return started(record, launch, confinement)

    async def interrupt(self, task_dir: Path, record: ProcessRecord, grace: float) -> None:
        """Kill the attempt's process tree (SIGTERM, then SIGKILL after ``grace``)."""
        await kill_tree(record.pid, grace, record.create_time)
