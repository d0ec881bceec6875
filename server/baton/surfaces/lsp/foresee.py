"""Saying beforehand whether a hunk will apply: after the user edits a document with
hunks in review, the ``baton/diff`` of a task is sent again when a hunk of it starts or
stops being one accept would call a conflict (its ``conflict`` flag), so a client shows
that before the user accepts. Checks are debounced and run off the event loop; a task
whose flags did not change is not sent again. The same pass follows an undo (or redo) of
accepted hunks in the document (:mod:`baton.surfaces.lsp.undone`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Protocol
from urllib.parse import unquote

import baton.surfaces.lsp.placement as placement
from baton.core.diff import FileDiff, HunkState
from baton.core.lifecycle import TaskState
from baton.surfaces.lsp.server import Feature
from baton.surfaces.lsp.undone import Undone


class _Server(Protocol):
    """What this needs of the language server."""

    reviews: dict[str, placement.TaskDiff]

    @property
    def encoding(self) -> str: ...

    @property
    def supervisor(self) -> Any: ...

    def open_document(self, uri: str) -> tuple[str, int | None] | None: ...

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]: ...


def _conflicts(
    td: placement.TaskDiff,
    files: list[FileDiff],
    texts: dict[str, tuple[str, int | None] | None],
    encoding: str,
) -> frozenset[str]:
    """The pending hunks of ``files`` accept would call conflicts in ``texts`` (CPU only)."""
    out = set()
    for f in files:
        doc = texts[f.path]
        for p in placement.place_file(td, f, doc[0] if doc else None, encoding):
            if p.hunk.state == HunkState.PENDING and not p.clean:
                out.add(p.hunk.id)
    return frozenset(out)


#: Seconds the server waits before it looks for an undo in a changed document itself.
UNDO_GRACE = 1.0


class Foresee(Feature):
    """Checks the hunks of changed documents; ``resend(task_id)`` sends a task's diff again."""

    def __init__(self, server: _Server, resend: Callable[[str], None], delay: float = 0.25) -> None:
        self.server = server
        self.resend = resend
        self.delay = delay
        self.known: dict[str, frozenset[str]] = {}  # task id → conflicting hunk ids last seen
        self._uris: set[str] = set()
        self._timer: asyncio.TimerHandle | None = None
        self.undone = Undone(server, resend)  # undo and redo of accepted hunks, seen from the text

    def changed(self, uri: str) -> None:
        """A document changed (didChange): check its hunks soon."""
        self._uris.add(unquote(uri))
        if self._timer is None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self.delay, self._start)

    def _start(self) -> None:
        self._timer = None
        uris, self._uris = self._uris, set()
        self.server.spawn(self.check(uris), "foresee conflicts")

    async def check(self, uris: set[str]) -> None:
        encoding = self.server.encoding
        for td in list(self.server.reviews.values()):
            if td.task.state != TaskState.REVIEW:
                continue
            files = [f for f in td.files if unquote(td.uri(f)) in uris]
            if not files:
                continue
            texts = {f.path: self.server.open_document(td.uri(f)) for f in files}

            now = await asyncio.to_thread(_conflicts, td, files, texts, encoding)
            if now != self.known.get(td.task.id, frozenset()):
                self.known[td.task.id] = now
                self.resend(td.task.id)
        # Baton's own clients report an undo at once (baton.reopen); the server's own look
        # comes a moment later, for the clients that do not. Both at once raced: the
        # broker decided once, but a client's report could be answered as kept.
        await asyncio.sleep(UNDO_GRACE)
        await self.undone.check(uris)
