"""Rich-client notifications: ``baton/tasks``, ``baton/status`` and ``baton/diff``.

``baton/status`` carries the task counts and how agents run here (``sandbox``: the user's
``sandbox`` setting against what this machine has), so a status bar can say plainly when
agents would run unsandboxed or are refused; it is sent again when a config file changes
(:meth:`Notifier.follow_settings`).

The broker's event bus calls :meth:`Notifier.on_event` for each committed event, on the
event loop. That call only marks what changed; the work (reading tasks and diffs, which
touches SQLite and git on worker threads) happens in coalesced flushes, so a task that
streams a hundred events a second costs one cheap call per event and a few messages.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types

import baton.surfaces.lsp.placement as placement
from baton.config.layers import ConfigError
from baton.config.settings import load_settings
from baton.core.events import Event, EventType
from baton.core.lifecycle import TaskState
from baton.core.task import Task, next_moves
from baton.process import sandbox
from baton.runtime import Supervisor
from baton.store.errors import UnknownTask
from baton.store.paths import task_dir
from baton.surfaces.lsp.documents import path_to_uri
from baton.surfaces.lsp.foresee import Foresee
from baton.surfaces.lsp.server import BatonServer, Feature
from baton.surfaces.lsp.watch import Watchers

log = logging.getLogger(__name__)
S = TaskState

TASKS = "baton/tasks"
STATUS = "baton/status"
DIFF = "baton/diff"

RUNNING_STATES = ("queued", "preparing", "running", "verifying", "rate_limited")
#: Failed tasks count in the status for this long after they failed.
FAILED_WINDOW = 24 * 3600.0
#: States whose diff the editor shows (a draft while working, the final one in review).
SHOWN = frozenset({S.PREPARING, S.RUNNING, S.VERIFYING, S.NEEDS_INPUT, S.REVIEW})


def summary(task: Task) -> dict[str, Any]:
    """A task as ``baton/tasks`` and ``baton.tasks`` show it."""
    return {
        "id": task.id,
        "title": task.title,
        "state": str(task.state),
        "action": task.action,
        "kind": task.kind,
        "worker": task.worker,
        "model": task.model,
        "root": task.root,
        "message": task.message,
        "summary": task.summary[:2000],
        "completion": str(task.completion) if task.completion else None,
        "attempts": task.attempts,
        "createdAt": task.created_at,
        "updatedAt": task.updated_at,
        "settledAt": task.settled_at,
        "next": next_moves(task),
        "proposedBy": task.worker if task.options.get("proposal") else None,
        "plan": task.options.get("plan") or [],
        "transport": task.options.get("transport"),
        "usage": task.options.get("usage"),  # baton.core.usage.Usage.to_json(), when known
    }


#: What of :func:`baton.process.sandbox.report` the status carries.
SANDBOX_KEYS = ("agents", "setting", "kind", "version", "why", "summary", "advice")


def sandbox_state(mode: str | None) -> dict[str, Any]:
    """How agents run under the ``sandbox`` setting ``mode`` (None: as the user config says),
    for ``baton/status`` (synchronous: the first call on a machine tries bubblewrap once)."""
    if mode is None:
        try:
            mode = load_settings(None).sandbox
        except ConfigError:
            mode = "auto"  # a broken user file: each delegation reports it
    found = sandbox.report(mode)
    return {key: found.get(key) for key in SANDBOX_KEYS}


def status_counts(totals: dict[str, int]) -> dict[str, int]:
    """Status-bar counts from tasks per state (``failed``: the recent failures only)."""
    return {
        "running": sum(totals.get(s, 0) for s in RUNNING_STATES),
        "needsInput": totals.get("needs_input", 0),
        "review": totals.get("review", 0),
        "failed": totals.get("failed", 0),
    }


class Notifier(Feature):
    """Turns broker events into notifications, code-lens refreshes and shown answers, and
    watches the worktrees of the running tasks ``followed`` says this editor follows."""

    def __init__(
        self, server: BatonServer, followed: Callable[[str], bool], delay: float = 0.03
    ) -> None:
        self.server = server
        self.followed = followed
        self.delay = delay
        self.watchers = Watchers(self._worktree_changed)
        self._tasks: set[str] = set()
        self._diffs: set[str] = set()
        self._flush: asyncio.TimerHandle | None = None
        self._answered: set[str] = set()
        self.status: dict[str, Any] = {}
        self._settings: asyncio.Task[None] | None = None
        # What the last status was made of: the counts are read again only after a task
        # changed state, the sandbox only after the settings changed (not at every flush:
        # each is a trip to a worker thread, the counts one to the store's).
        self._counts: dict[str, int] | None = None
        self._sandbox: tuple[str | None, dict[str, Any]] | None = None
        self._recount = True
        self._counted: list[str] = []

    # -- called per committed event, on the loop: must stay cheap ---------------------------

    async def started(self, supervisor: Supervisor) -> None:
        """Say what there is now: the status, the diffs in review, the questions waiting."""
        await self.send_status(recount=True)
        self.follow_settings()
        for root in sorted(self.server.roots):
            for task in await supervisor.list_tasks(states=["review"], root=root, limit=200):
                await self.send_diff(task.id)
            for task in await supervisor.list_tasks(states=["needs_input"], root=root, limit=200):
                self.server.questions.update(task)
        if self.server.reviews:
            self.server.refresh_code_lenses()

    def on_event(self, event: Event) -> None:
        if event.type == EventType.STATE:
            self._recount = True
            self._tasks.add(event.task_id)
            to = event.data.get("to")
            if to in ("review", "applied", "rejected", "needs_input"):
                self._diffs.add(event.task_id)
            if to == "answered":
                self._answered.add(event.task_id)
        elif event.type == EventType.DIFF:
            self._diffs.add(event.task_id)
        else:
            if event.type == EventType.LOG and event.data.get("revision") is not None:
                self._tell_revision(event)
            return
        self._arm()

    def _tell_revision(self, event: Event) -> None:
        """A revision turn left nothing to decide ("changed nothing", "no hunks left"):
        say it in this editor when the task is in its review or it delegated the task."""
        td = self.server.reviews.get(event.task_id)
        if td is None and not self.followed(event.task_id):
            return
        title = td.task.title if td is not None else event.task_id
        message = f"Baton: {title}: {event.data.get('message', '')}"
        self.server.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Info, message=message)
        )

    def touch(self, task_id: str, *, diff: bool = False) -> None:
        """Re-send a task's summary (and diff) soon, e.g. after an accept of some hunks."""
        self._tasks.add(task_id)
        self._recount = True
        if diff:
            self._diffs.add(task_id)
        self._arm()

    def _arm(self) -> None:
        if self._flush is None:
            loop = asyncio.get_running_loop()
            self._flush = loop.call_later(self.delay, self._start_flush)

    def _start_flush(self) -> None:
        self._flush = None
        tasks, self._tasks = self._tasks, set()
        diffs, self._diffs = self._diffs, set()
        answered, self._answered = self._answered, set()
        self.server.spawn(self.flush(tasks, diffs, answered), "notify")

    # -- the work, off the loop where it touches the store or git --------------------------

    async def flush(self, tasks: set[str], diffs: set[str], answered: set[str]) -> None:
        sup = self.server.supervisor
        if sup is None:
            return
        changed: list[Task] = []
        for tid in sorted(tasks):
            try:
                changed.append(await sup.get(tid))
            except UnknownTask:
                continue
        if changed:
            self.server.protocol.notify(TASKS, {"tasks": [summary(t) for t in changed]})
        for task in changed:
            self._watch(task)
            self.server.questions.update(task)
        await self.send_status()
        lenses = False
        for tid in sorted(diffs):
            lenses = await self.send_diff(tid) or lenses
        if lenses:
            self.server.refresh_code_lenses()
        for task in changed:
            if task.id in answered and self.followed(task.id) and task.state == S.ANSWERED:
                await self.show_answer(task)

    def _watch(self, task: Task) -> None:
        """Follow the worktree of a running task this editor delegated."""
        if task.state == S.RUNNING and task.worktree and self.followed(task.id):
            self.watchers.start(task.id, Path(task.worktree))
        elif task.state not in (S.RUNNING, S.PREPARING, S.QUEUED):
            self.watchers.stop(task.id)

    def _worktree_changed(self, task_id: str) -> None:
        sup = self.server.supervisor
        if sup is not None and not sup.request_draft(task_id):
            self.watchers.stop(task_id)

    def follow_settings(self) -> None:
        """Send the status again whenever the broker re-reads a changed config file (the
        user's ``sandbox`` setting may have changed); until :meth:`close`."""
        sup = self.server.supervisor
        if sup is None or self._settings is not None:
            return
        cache = sup.settings

        async def follow() -> None:
            seen = cache.generation
            while True:
                try:
                    seen = await cache.wait_for_change(seen, timeout=3600.0)
                except TimeoutError:
                    continue
                self._sandbox = None  # the user's sandbox setting may have changed
                await self.send_status(recount=True)

        self._settings = self.server.spawn(follow(), "status on a settings change")

    async def send_status(self, *, recount: bool = False) -> dict[str, Any]:
        """Send ``baton/status`` when it changed; the counts and ``sandbox``, as sent. The
        counts are read again when asked (``recount``), after a task of this broker changed
        state, or for other roots; else the last ones stand."""
        sup = self.server.supervisor
        if sup is None:
            return {}
        roots = sorted(self.server.roots)
        if recount or self._recount or self._counts is None or self._counted != roots:
            self._recount = False  # a state change while counting counts again next time
            self._counted = roots
            since = time.time() - FAILED_WINDOW
            self._counts = status_counts(await sup.count_by_state(roots, failed_since=since))
        setting = self._sandbox_setting(roots)
        if self._sandbox is None or self._sandbox[0] != setting:
            self._sandbox = (setting, await asyncio.to_thread(sandbox_state, setting))
        counts: dict[str, Any] = {**self._counts, "sandbox": self._sandbox[1]}
        if counts != self.status:
            self.status = counts
            self.server.protocol.notify(STATUS, counts)
        return counts

    def _sandbox_setting(self, roots: list[str]) -> str | None:
        """The user's ``sandbox`` setting as the broker read it (it is in the user config
        only: any root's settings say it); None when no root's settings are loaded."""
        sup = self.server.supervisor
        for root in roots:
            found = sup.settings.last_good(root) if sup is not None else None
            if found is not None:
                return found.sandbox
        return None

    async def send_diff(self, task_id: str) -> bool:
        """Send the task's diff; True when the hunks shown in review changed (lenses)."""
        sup = self.server.supervisor
        if sup is None:
            return False
        try:
            if (await sup.get(task_id)).state != S.REVIEW:
                self.server.clear_findings(task_id)
            td = await placement.load(sup, task_id)
        except UnknownTask:
            return False
        if td is None:
            return False
        had = task_id in self.server.reviews
        self.server.get_feature(Foresee).undone.watch(
            td
        )  # its accepted hunks: an undo reopens them
        if td.task.state in SHOWN:
            self.server.reviews[task_id] = td
        else:
            self.server.reviews.pop(task_id, None)
        data = await self.server.diff_payload(td)
        self.server.protocol.notify(DIFF, data)
        await self.server.publish_findings(td)
        return td.task.state == S.REVIEW or had

    async def show_answer(self, task: Task) -> None:
        """Show an answered task's answer without taking focus.

        An "Explain" answer opens as a markdown document beside the code (``answer.md`` in
        the task's folder, ``takeFocus: false``); other tasks that changed nothing, and
        clients that cannot show documents, get a message.
        """
        sup = self.server.supervisor
        if sup is None:
            return
        text = task.summary.strip() or "(the agent gave no answer)"
        caps = self.server.client_capabilities.window
        show = caps.show_document if caps is not None else None
        if task.action == "explain" and show is not None and show.support:
            path = task_dir(sup.home, task.id) / "answer.md"
            body = f"# {task.title}\n\n{text}\n"

            def write() -> None:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(body, encoding="utf-8")

            try:
                await asyncio.to_thread(write)
                result = await self.server.window_show_document_async(
                    types.ShowDocumentParams(uri=path_to_uri(path), take_focus=False)
                )
                if result.success:
                    return
            except Exception as exc:
                log.info("could not show the answer of %s: %s", task.id, exc)
        lead = "" if task.action == "explain" else f"{task.title}: no changes. "
        self.server.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Info, message=f"Baton: {lead}{text}")
        )

    async def stop(self) -> None:
        self.watchers.close()
        self.close()

    def close(self) -> None:
        if self._settings is not None:
            self._settings.cancel()
            self._settings = None
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
