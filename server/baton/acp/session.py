"""The ACP session a task's session runner holds: opened, prompted, cancelled, renewed.

:meth:`Session.start` does the ``initialize`` handshake (Baton offers file reads and writes,
no terminal) and continues the session the broker names when the agent can load one — its
history replays as updates, which are not events of the turn (:attr:`Session.replaying`) —
else opens a new one. After a turn that went wrong (with ``fresh_session_after_abort``), or
when the named session could not be loaded, the next prompt goes to a new session and
carries what the old one knew: the brief and the last turns, asked and answered
(:meth:`Session.carried`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import acp
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

from baton import __version__
from baton.acp.spec import Spec

log = logging.getLogger(__name__)

#: Seconds the agent gets to answer ``initialize`` and open a session.
START_TIMEOUT = 120.0
#: The turns a new session is told about, and how much of each side.
CARRIED_TURNS = 5
CARRIED_CHARS = 500


class Session:
    """One agent connection's session (``log``: a line in the open attempt's events)."""

    def __init__(
        self, conn: acp.ClientSideConnection, spec: Spec, log: Callable[[str], None]
    ) -> None:
        self.conn = conn
        self.spec = spec
        self.log = log
        self.id: str | None = None
        self.can_load = False
        self.replaying = False  # a loaded session replays its history as updates
        self.fresh_next = False  # start the next turn in a new session, carrying the context
        self.history: list[tuple[str, str]] = []  # (prompt, answer) of this runner's turns

    async def start(self) -> None:
        """``initialize``, then open the session; raises when the agent does not start."""
        init = await asyncio.wait_for(
            self.conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                    terminal=False,
                ),
                client_info=Implementation(name="baton", title="Baton", version=__version__),
            ),
            START_TIMEOUT,
        )
        caps = init.agent_capabilities
        self.can_load = bool(caps and caps.load_session)
        await self.open()

    async def open(self) -> None:
        """Continue the spec's session when the agent can load it; else a new one."""
        wanted = self.spec.session_id
        if wanted and self.can_load:
            self.replaying = True
            try:
                await asyncio.wait_for(
                    self.conn.load_session(cwd=self.spec.cwd, session_id=wanted, mcp_servers=[]),
                    START_TIMEOUT,
                )
                self.id = wanted
                return
            except Exception as exc:
                log.warning("could not load session %s: %s", wanted, exc)
            finally:
                self.replaying = False
        await self._new()
        if wanted:
            self.fresh_next = True  # the first prompt carries the context over

    async def _new(self) -> None:
        resp = await asyncio.wait_for(
            self.conn.new_session(cwd=self.spec.cwd, mcp_servers=[]), START_TIMEOUT
        )
        self.id = resp.session_id

    async def renew(self, text: str) -> str:
        """A new session; the prompt ``text`` becomes, carrying what the old one knew."""
        self.fresh_next = False
        old = self.id
        await self._new()
        self.log(f"continuing in a new session {self.id} (the old one was {old})")
        return self.carried(text)

    def carried(self, text: str) -> str:
        """``text`` as the first prompt of a new session: the brief and the last turns first."""
        brief = text_of(self.spec.brief_file).strip()
        lines = ["(Baton: this continues earlier work on the same task in a new session.)"]
        if brief:
            lines += ["", "The task:", brief]
        if self.history:
            lines += ["", "Earlier in this task:"]
            for asked, said in self.history[-CARRIED_TURNS:]:
                lines.append(f"- asked: {asked.strip()[:CARRIED_CHARS]}")
                lines.append(f"  you answered: {said.strip()[:CARRIED_CHARS]}")
        lines += ["", "The work so far is in the current folder. Now:", text]
        return "\n".join(lines)

    async def prompt(self, text: str) -> dict[str, Any]:
        """``session/prompt``: the turn's result (camelCase JSON) once it has ended."""
        assert self.id is not None
        response = await self.conn.prompt(session_id=self.id, prompt=[acp.text_block(text)])
        dumped: dict[str, Any] = response.model_dump(by_alias=True, exclude_none=True, mode="json")
        return dumped

    async def cancel(self) -> None:
        """``session/cancel`` (its failure is ignored: the agent may be gone)."""
        if self.id is not None:
            try:
                await self.conn.cancel(session_id=self.id)
            except Exception as exc:
                log.debug("session/cancel failed: %s", exc)


def text_of(path: str) -> str:
    """The file's text; empty when there is no path or no such file."""
    try:
        return Path(path).read_text(encoding="utf-8") if path else ""
    except OSError:
        return ""
