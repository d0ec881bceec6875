"""Permission prompts of ACP agents, in the editor.

When a task's agent asks permission (an ACP ``session/request_permission`` the config policy
did not answer), every client gets a ``baton/permission`` notification — ``{taskId, id,
title, tool, kind, preview, command, files, options: [{id, name, kind}], status}`` — so the
VS Code and Neovim clients can show the command or diff inline and answer with the
``baton.answerPermission`` command. Clients that did not say they show it themselves
(setting ``permissionPrompts: "inline"``) also get a ``window/showMessageRequest`` with the
options, which works in any LSP client. A later notification with ``status`` ``answered`` or
``cancelled`` closes the prompt.
"""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types

from baton.core.events import Event, EventType
from baton.runtime import Supervisor, TaskError
from baton.surfaces.lsp.server import BatonServer, Feature

log = logging.getLogger(__name__)

PERMISSION = "baton/permission"
#: How much of a preview the message request shows (the notification has all of it).
MESSAGE_PREVIEW = 600


def payload(event: Event, title: str = "") -> dict[str, Any]:
    d = event.data
    return {
        "taskId": event.task_id,
        "id": d.get("id"),
        "title": title,
        "tool": d.get("tool"),
        "kind": d.get("kind"),
        "preview": d.get("preview"),
        "command": d.get("command"),
        "files": d.get("files") or [],
        "options": d.get("options") or [],
        "status": d.get("status"),
        "answer": d.get("answer"),
        "by": d.get("by"),
    }


class PermissionPrompts(Feature):
    """Sends permission requests to the editor and passes the user's choice back."""

    def __init__(self, server: BatonServer) -> None:
        self.server = server

    def on_event(self, event: Event) -> None:
        """A committed ``permission`` event (cheap: the rest happens in a background task)."""
        if event.type != EventType.PERMISSION or event.data.get("by") == "policy":
            return  # answered by the config policy: nothing to ask
        self.server.spawn(self.send(event), f"permission {event.task_id}")

    async def send(self, event: Event) -> None:
        sup = self.server.supervisor
        title = ""
        if sup is not None:
            try:
                title = (await sup.get(event.task_id)).title
            except Exception:
                title = ""
        data = payload(event, title)
        self.server.protocol.notify(PERMISSION, data)
        if data["status"] == "pending" and self.server.settings.permission_prompts != "inline":
            await self.ask(data)

    async def started(self, supervisor: Supervisor) -> None:
        await self.resend_pending(sorted(self.server.roots))

    async def resend_pending(self, roots: list[str]) -> None:
        """Prompt again for requests that wait on a task this broker follows (e.g. adopted
        from a broker that died while the user had not answered yet)."""
        sup = self.server.supervisor
        if sup is None:
            return
        for root in roots:
            for task in await sup.list_tasks(states=["needs_input"], root=root, limit=200):
                waiting = await sup.permissions(task.id)
                for data in waiting:
                    event = Event(EventType.PERMISSION, data, task_id=task.id)
                    self.server.spawn(self.send(event), f"permission {task.id}")

    async def ask(self, data: dict[str, Any]) -> None:
        """``window/showMessageRequest`` with the options; the choice answers the request."""
        options = [o for o in data["options"] if isinstance(o, dict)]
        titles = _titles(options)
        preview = str(data.get("preview") or "")
        if len(preview) > MESSAGE_PREVIEW:
            preview = preview[:MESSAGE_PREVIEW] + "…"
        what = f" ({data['title']})" if data.get("title") else ""
        message = f"Baton: task {data['taskId']}{what} asks permission: {data['tool']}"
        if preview and preview != data.get("tool"):
            message += f"\n\n{preview}"
        try:
            chosen = await self.server.window_show_message_request_async(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Warning,
                    message=message,
                    actions=[types.MessageActionItem(title=t) for t in titles],
                )
            )
        except Exception as exc:
            log.info("could not ask for permission: %s", exc)
            return
        if chosen is None:
            return  # dismissed: the request stays open (answer later, or cancel the task)
        option = options[titles.index(chosen.title)] if chosen.title in titles else None
        if option is None:
            return
        sup = await self.server.broker()
        try:
            await sup.answer(str(data["taskId"]), str(option["id"]), str(data["id"]))
        except TaskError as exc:
            if "no permission request is waiting" not in str(exc):
                self.server.warn(str(exc))


def _titles(options: list[dict[str, Any]]) -> list[str]:
    """One distinct button title per option (its name; its id when names repeat)."""
    names = [str(o.get("name") or o.get("id")) for o in options]
    return [
        name if names.count(name) == 1 else f"{name} ({o.get('id')})"
        for name, o in zip(names, options, strict=True)
    ]
