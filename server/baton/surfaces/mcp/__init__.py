"""``baton mcp``: an MCP server on stdio whose tools are the broker's methods."""

from __future__ import annotations

from pathlib import Path


def run_stdio(folder: Path) -> int:
    """Serve MCP on stdin/stdout for an agent working in ``folder``."""
    from baton.surfaces.mcp.server import run

    return run(folder)
