"""Budget alerts in the editor: a ``budget`` event of kind ``alert`` (80 % or 90 % of a
daily budget, said once per threshold, scope and day by the broker that saw it) becomes a
``window/showMessage`` warning, which every LSP client shows (VS Code and Neovim among
them); a ``stop`` of a task this editor follows or reviews becomes one too. The
desktop notifications and the dashboard build on the same event (see
docs/reference/websocket.md, "Budget events")."""

from __future__ import annotations

from collections.abc import Callable

from lsprotocol import types

from baton.core.events import Event, EventType
from baton.surfaces.lsp.server import BatonServer, Feature


class BudgetAlerts(Feature):
    def __init__(self, server: BatonServer, followed: Callable[[str], bool]) -> None:
        self.server = server
        self.followed = followed  # the tasks this editor follows (its progress)

    def on_event(self, event: Event) -> None:
        if event.type != EventType.BUDGET:
            return
        kind = event.data.get("kind")
        mine = self.followed(event.task_id) or event.task_id in self.server.reviews
        if kind == "alert" or (kind == "stop" and mine):
            message = f"Baton: {event.data.get('message') or 'a budget was reached'}"
            if kind == "stop":
                message += f" (task {event.task_id}; baton retry {event.task_id} --max-…)"
            self.server.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message=message)
            )
