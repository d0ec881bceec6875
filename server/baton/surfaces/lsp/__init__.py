"""The Baton language server (``baton lsp``): a pygls server on stdio embedding the broker.

See :mod:`baton.surfaces.lsp.server` for the wiring and docs/reference/protocol.md for every
command, notification and payload.
"""

from __future__ import annotations

import logging
import sys


def run_stdio() -> int:
    """Serve LSP on stdin/stdout until the client exits."""
    from baton.surfaces.lsp.server import build_server

    # stdout is the protocol channel: logs go to stderr, and only what matters.
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="baton lsp %(levelname)s %(message)s"
    )
    # pygls logs every refused request with a traceback; the client gets the error anyway.
    logging.getLogger("pygls").setLevel(logging.CRITICAL)
    server = build_server()
    server.start_io()
    return 0
