"""The broker's desktop notifications, on when the user's config says ``[notify] desktop``.

Every broker (``baton serve``, the one inside ``baton lsp``) listens to its own committed
events; an event that is a notice (:mod:`baton.surfaces.desktop` says which) is looked at
off the bus: the task's settings decide whether it is sent (``[notify] desktop`` and ``on``,
user-only keys, re-read when the file changes), its texts are masked with the task's
secret values and cut, and it goes out through the :class:`~baton.surfaces.desktop.Batcher`
(a burst as one summary, at a bounded rate). A broker sends only for the tasks it
supervises — the events it commits — so two brokers never send the same notice.
``baton watch --notify`` leaves the desktop to the broker when this is on (it rings the
terminal's bell alone).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from baton.config.layers import ConfigError
from baton.config.settings import Settings
from baton.core.events import Event
from baton.errors import NotFound
from baton.runtime import Supervisor
from baton.surfaces.desktop import Batcher, Desktop, Show, classify, masked, notice_of

log = logging.getLogger(__name__)


class DesktopNotices:
    """Sends the notices of one broker's tasks to the desktop (see the module's docstring)."""

    def __init__(self, sup: Supervisor, show: Show | None = None, **batching: float) -> None:
        self.sup = sup
        self.desktop = Desktop()
        self.batcher = Batcher(show or self.desktop.show, **batching)
        self._jobs: set[asyncio.Task[None]] = set()
        self._listening = False

    def start(self) -> None:
        if not self._listening:
            self._listening = True
            self.sup.listen(self.on_event)

    def on_event(self, event: Event) -> None:
        """Called for each committed event, on the loop: only a notice costs more than a
        look-up in a table."""
        if classify(str(event.type), event.data) is None:
            return
        self._spawn(self._consider(event))

    async def _consider(self, event: Event) -> None:
        try:
            task = await self.sup.get(event.task_id)
        except NotFound:
            return
        notice = notice_of(str(event.type), event.data, task.id, task.title)
        settings = self._settings(task.root)
        if notice is None or settings is None or not settings.notify_desktop:
            return
        if notice.kind in settings.notify_on:  # the secrets only now: they may be looked up
            self.batcher.add(masked(notice, await self.sup.secrets_of(task)))

    def _settings(self, root: str) -> Settings | None:
        cache = self.sup.settings
        found = cache.last_good(root) if root else None
        if found is not None:
            return found
        try:
            return cache.get(root) if root else None
        except ConfigError:
            return None  # a broken file: each delegation reports it

    def _spawn(self, job: Any) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(job, name="notice")
        self._jobs.add(task)

        def done(t: asyncio.Task[None]) -> None:
            self._jobs.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.warning("a desktop notice failed", exc_info=t.exception())

        task.add_done_callback(done)

    async def close(self) -> None:
        if self._listening:
            self._listening = False
            self.sup.unlisten(self.on_event)
        for job in list(self._jobs):
            job.cancel()
        await asyncio.gather(*self._jobs, return_exceptions=True)
        await self.batcher.close()


def start_notices(sup: Supervisor) -> DesktopNotices:
    """Listen to ``sup``'s events and send its tasks' notices as the user's config says."""
    notices = DesktopNotices(sup)
    notices.start()
    return notices
