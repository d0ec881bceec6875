"""Permission requests of an ACP session: the events they become, the options answers mean.

:func:`permission_event` turns a ``session/request_permission`` into a ``permission`` event
(tool, kind, preview — the command or a unified diff — and the options by kind);
:func:`pick_option` finds the option an answer means (by id, by kind, or by a word such as
``allow`` / ``always`` / ``reject``); :func:`option_for_decision` the one a policy decision
picks. :class:`PermissionRequests` holds one session's requests in the session runner: the
policy (:mod:`baton.acp.policy`) answers what it can, the rest wait — with or without a
broker attached — for an answer over the control socket, or for the turn to be cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from baton.acp.policy import Decision, decide
from baton.acp.tool_calls import command_of, paths_of, preview, relative, tool_name
from baton.core.events import Event, EventType

#: Words an answer may use instead of an option id or kind.
ALIASES: dict[str, tuple[str, ...]] = {
    "allow": ("allow_once", "allow_always"),
    "once": ("allow_once",),
    "yes": ("allow_once", "allow_always"),
    "always": ("allow_always",),
    "reject": ("reject_once", "reject_always"),
    "deny": ("reject_once", "reject_always"),
    "no": ("reject_once", "reject_always"),
    "never": ("reject_always", "reject_once"),
}
#: The option kind a policy decision picks, best first.
DECISION_KINDS: dict[str, tuple[str, ...]] = {
    "allow": ("allow_once", "allow_always"),
    "deny": ("reject_once", "reject_always"),
}


def options_of(options: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    return [
        {
            "id": str(o.get("optionId", "")),
            "name": str(o.get("name", "")),
            "kind": str(o.get("kind", "")),
        }
        for o in options
    ]


def permission_event(
    perm_id: str,
    tool_call: Mapping[str, Any],
    options: Sequence[Mapping[str, Any]],
    root: str,
    *,
    status: str = "pending",
    answer: str | None = None,
    by: str | None = None,
) -> Event:
    """A ``permission`` event for a request (``status``: pending, answered, cancelled)."""
    command = command_of(tool_call.get("rawInput"))
    data: dict[str, Any] = {
        "id": perm_id,
        "tool": str(tool_call.get("title") or tool_name(tool_call)),
        "kind": str(tool_call.get("kind") or "other"),
        "preview": preview(tool_call, root),
        "command": command,
        "files": [relative(p, root) for p in paths_of(tool_call)],
        "options": options_of(options),
        "toolCallId": str(tool_call.get("toolCallId", "")),
        "status": status,
    }
    if answer is not None:
        data["answer"] = answer
    if by is not None:
        data["by"] = by
    return Event(EventType.PERMISSION, data)


def pick_option(options: Sequence[Mapping[str, Any]], wanted: str) -> dict[str, str] | None:
    """The option ``wanted`` names: an option id, an option kind, or an alias word."""
    opts = options_of(options)
    for o in opts:
        if o["id"] == wanted:
            return o
    kinds = ALIASES.get(wanted.lower(), (wanted,))
    for kind in kinds:
        for o in opts:
            if o["kind"] == kind:
                return o
    return None


def option_for_decision(options: Sequence[Mapping[str, Any]], decision: str) -> str | None:
    """The option id a policy decision (``allow``/``deny``) picks; None if none fits."""
    opts = options_of(options)
    for kind in DECISION_KINDS.get(decision, ()):
        for o in opts:
            if o["kind"] == kind:
                return o["id"]
    return None


@dataclass(slots=True)
class _Waiting:
    future: asyncio.Future[str | None]  # the chosen option id; None when cancelled
    options: list[dict[str, Any]]
    tool_call: dict[str, Any]


class PermissionRequests:
    """The permission requests of one session, answered by the policy or by the user."""

    def __init__(
        self, policy: dict[str, Decision], root: str, emit: Callable[[Sequence[Event]], None]
    ) -> None:
        self.policy = policy
        self.root = root
        self.emit = emit  # writes the turn's events
        self.waiting: dict[str, _Waiting] = {}  # permission id → the request waiting
        self.rejected = ""  # what the user rejected in this turn, if anything
        self._seq = 0

    async def request(
        self, call: dict[str, Any], opts: list[dict[str, Any]], *, cancelling: bool
    ) -> str | None:
        """The option id chosen for a request (``call``: its tool call, ``opts``: its
        options, as sent); None when it was cancelled. Each step is a ``permission``
        event: asked, then answered (by the policy or the user) or cancelled."""
        self._seq += 1
        perm_id = f"p{self._seq}"
        decision = decide(self.policy, call.get("kind"), paths_of(call), self.root)
        if decision != "ask":
            chosen = option_for_decision(opts, decision)
            if chosen is not None:
                self._event(perm_id, call, opts, status="answered", answer=chosen, by="policy")
                return chosen
        if cancelling:
            return None
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self.waiting[perm_id] = _Waiting(future, opts, call)
        self._event(perm_id, call, opts)
        try:
            chosen_id = await future
        finally:
            self.waiting.pop(perm_id, None)
        if chosen_id is None:
            self._event(perm_id, call, opts, status="cancelled")
            return None
        kind = next((o.get("kind") for o in opts if o.get("optionId") == chosen_id), "")
        if str(kind).startswith("reject"):
            self.rejected = str(call.get("title") or call.get("kind") or "a tool call")
        self._event(perm_id, call, opts, status="answered", answer=chosen_id, by="user")
        return chosen_id

    def answer(self, perm_id: object, option: object) -> dict[str, Any]:
        """The control socket's ``answer``: choose ``option`` for the waiting request
        ``perm_id`` (None: the only one waiting). Its reply, refusals included."""
        if not self.waiting:
            return {"ok": False, "error": "no permission request is waiting for an answer"}
        if perm_id is None and len(self.waiting) == 1:
            perm_id = next(iter(self.waiting))
        waiting = self.waiting.get(str(perm_id))
        if waiting is None:
            ids = ", ".join(sorted(self.waiting))
            return {"ok": False, "error": f"no waiting permission {perm_id!r}; waiting: {ids}"}
        chosen = pick_option(waiting.options, str(option or ""))
        if chosen is None:
            names = ", ".join(f"{o.get('optionId')} ({o.get('kind')})" for o in waiting.options)
            return {"ok": False, "error": f"unknown option {option!r}; options: {names}"}
        if not waiting.future.done():
            waiting.future.set_result(chosen["id"])
        return {"ok": True, "id": perm_id, "option": chosen}

    def cancel_all(self) -> None:
        """Every waiting request ends cancelled (the turn was cancelled, or the session ends)."""
        for waiting in list(self.waiting.values()):
            if not waiting.future.done():
                waiting.future.set_result(None)

    def _event(
        self,
        perm_id: str,
        call: dict[str, Any],
        opts: list[dict[str, Any]],
        *,
        status: str = "pending",
        answer: str | None = None,
        by: str | None = None,
    ) -> None:
        self.emit(
            [permission_event(perm_id, call, opts, self.root, status=status, answer=answer, by=by)]
        )
