"""The Baton language server (``baton lsp``): a pygls server on stdio embedding the broker.

:func:`create_language_server` puts it together: the server of :mod:`.server` (state and
plumbing), its features (each taking the server and the callables it needs) and the
handlers of :mod:`.features` and :mod:`.commands`. See docs/reference/protocol.md for every
command, notification and payload. (Nothing is imported before it is used: the CLI imports
this package to start the server.)
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from baton.surfaces.lsp.server import BatonServer


def create_language_server() -> BatonServer:
    """A server with every Baton feature and handler registered."""
    from baton.surfaces.lsp.budget_alerts import BudgetAlerts
    from baton.surfaces.lsp.commands import register as register_commands
    from baton.surfaces.lsp.features import register as register_features
    from baton.surfaces.lsp.foresee import Foresee
    from baton.surfaces.lsp.ide import ClaudeIde
    from baton.surfaces.lsp.notify import Notifier
    from baton.surfaces.lsp.permissions import PermissionPrompts
    from baton.surfaces.lsp.planning import Plans
    from baton.surfaces.lsp.progress import Progress
    from baton.surfaces.lsp.server import BatonServer
    from baton.surfaces.lsp.transcripts import Transcripts

    server = BatonServer()
    progress = Progress(
        server, server.cancel_or_warn, server.spawn, lambda: server.settings.progress_interval
    )
    plans = Plans(server)  # a planner's answer is its plan (baton/plan), never shown as text
    notifier = Notifier(
        server, followed=lambda task_id: task_id in progress.followed and not plans.owns(task_id)
    )

    def resend(task_id: str) -> None:
        notifier.touch(task_id, diff=True)

    # The order the hooks run in: the IDE server starts first and stops first; events reach
    # the progress and the transcripts before the notifier marks them for its next flush.
    server.add_feature(ClaudeIde(server))
    server.add_feature(progress)
    server.add_feature(Transcripts(server))
    server.add_feature(notifier)
    server.add_feature(BudgetAlerts(server, lambda task_id: task_id in progress.followed))
    server.add_feature(PermissionPrompts(server))
    server.add_feature(Foresee(server, resend))
    server.add_feature(plans)
    register_features(server)
    register_commands(server)
    return server


def run_stdio() -> int:
    """Serve LSP on stdin/stdout until the client exits."""

    # stdout is the protocol channel: logs go to stderr, and only what matters.
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="baton lsp %(levelname)s %(message)s"
    )
    # pygls logs every refused request with a traceback; the client gets the error anyway.
    logging.getLogger("pygls").setLevel(logging.CRITICAL)
    server = create_language_server()
    server.start_io()
    return 0
