"""Baton as "the IDE" of a Claude Code session running in a terminal.

Claude Code connects to an IDE over MCP on a websocket (found through a lock file in
``~/.claude/ide``) and, when the model writes or edits a file, asks the IDE to show the diff and
waits for the user's decision. This package is that server, independent of the broker:

    server = await start_ide_server(host, [workspace])
    env = claude_env(server.port, os.environ)   # then run `claude` in a terminal with env
    ...
    await server.close()

The editor side is an :class:`IdeHost` (``open_diff`` and ``closed``; the rest optional). See
docs/reference/claude-ide.md.
"""

from __future__ import annotations

from baton.surfaces.ide.host import (
    ClosedBy,
    Diagnostic,
    DiffDecision,
    DiffRequest,
    DiffUnavailable,
    FileDiagnostics,
    IdeClient,
    IdeHost,
    OpenEditor,
    OpenFileRequest,
    Position,
    Selection,
    file_uri,
)
from baton.surfaces.ide.launch import claude_env
from baton.surfaces.ide.lockfile import LockFile, claude_config_dir
from baton.surfaces.ide.server import IdeLimits, IdeServer, start_ide_server

__all__ = [
    "ClosedBy",
    "Diagnostic",
    "DiffDecision",
    "DiffRequest",
    "DiffUnavailable",
    "FileDiagnostics",
    "IdeClient",
    "IdeHost",
    "IdeLimits",
    "IdeServer",
    "LockFile",
    "OpenEditor",
    "OpenFileRequest",
    "Position",
    "Selection",
    "claude_config_dir",
    "claude_env",
    "file_uri",
    "start_ide_server",
]
