"""``baton mcp``: an MCP server on stdio whose tools are the broker's methods."""

from __future__ import annotations

import json
from pathlib import Path


def run_stdio(folder: Path, tools: str | None = None) -> int:
    """Serve MCP on stdin/stdout for an agent working in ``folder``, offering ``tools``
    (comma-separated names; default all)."""
    from baton.surfaces.mcp.server import run

    return run(folder, tools)


def print_tools(tools: str | None = None, *, as_json: bool = False) -> str:
    """The tool list ``baton mcp`` would offer, and its size (``--print-tools``)."""
    from baton.surfaces.mcp.tools import INSTRUCTIONS, chosen, report, size

    specs = chosen(tools)
    if not as_json:
        return report(specs)
    definitions = [s.definition() for s in specs]
    doc = {"tools": definitions, "characters": size(definitions), "instructions": INSTRUCTIONS}
    return json.dumps(doc, indent=2)
