"""The logging switch: ``baton -v`` / ``-vv`` or ``BATON_LOG=debug|info|warning|error``.

Without either, each command keeps its own quiet default (warnings on stderr for ``lsp`` and
``mcp``, nothing for the rest). With one, logs of that level and above go to stderr — never
stdout, which is the protocol channel of ``lsp`` and ``mcp`` and the JSON of ``--json``.
``BATON_LOG`` is inherited by the broker a command starts on demand, so its log (in its
state folder) gets the same level. The more verbose of the two wins. (:mod:`logging` is
imported only when a level is asked for: every command starts here.)
"""

from __future__ import annotations

import os
import sys

from baton.errors import InvalidInput

#: The levels by name: :mod:`logging`'s values (DEBUG, INFO, WARNING, ERROR), which are fixed.
LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}
ENV = "BATON_LOG"


class BadLevel(InvalidInput, ValueError):
    """``BATON_LOG`` holds something that is not a level."""


def level(verbose: int, env: str | None) -> int | None:
    """The level asked for, or None for the command's default."""
    asked: list[int] = []
    if verbose:
        asked.append(LEVELS["info"] if verbose == 1 else LEVELS["debug"])
    if env and env.strip():
        name = env.strip().lower()
        if name not in LEVELS:
            raise BadLevel(f"{ENV}={env!r}: expected one of {', '.join(LEVELS)}")
        asked.append(LEVELS[name])
    return min(asked) if asked else None


def configure(verbose: int) -> None:
    """Send logs to stderr at the level asked for (``-v``, ``BATON_LOG``), if any."""
    try:
        lvl = level(verbose, os.environ.get(ENV))
    except BadLevel as exc:
        sys.stderr.write(f"baton: {exc}; logging stays at its default\n")
        return
    if lvl is None:
        return
    import logging

    logging.basicConfig(
        stream=sys.stderr,
        level=lvl,
        format="%(asctime)s baton[%(process)d] %(name)s %(levelname)s %(message)s",
    )
    logging.getLogger().setLevel(lvl)
