"""Undo and redo of accepted hunks, seen by the server from ``didChange``, for any client.

An editor's undo takes an accepted hunk back out of the open document. Baton's own
clients also ask for a reopen (``baton.reopen``), but a plain LSP client only sends the
change; so the server looks itself: after a document with accepted hunks changes, each
accepted hunk whose place now holds its old lines is reopened, and a hunk reopened that
way whose place holds its new lines again (a redo) is accepted again. The broker decides
from the document's text (:mod:`baton.core.held`), and decides each hunk once: a Baton
client's report of the same undo finds the hunk already pending, and
:meth:`Undone.also_done` counts it as reopened for that client too.

Checks ride on :class:`~baton.surfaces.lsp.foresee.Foresee`'s debounced ``didChange``
pass and run their text comparisons off the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol
from urllib.parse import unquote

import baton.surfaces.lsp.placement as placement
from baton.core.diff import FileDiff, HunkState, apply_hunks
from baton.core.held import Placement, Side
from baton.core.lifecycle import TaskState
from baton.runtime import Redecided

log = logging.getLogger(__name__)
S = TaskState
#: States whose accepted hunks an undo can take back.
DECIDED = frozenset({S.REVIEW, S.APPLIED})
#: The most tasks followed at once (the latest diffs sent): an applied task stays followed
#: until newer ones push it out, as an editor's undo history fades.
MAX_FOLLOWED = 64


class _Broker(Protocol):
    async def reopen(
        self, task_id: str, hunk_ids: Sequence[str], *, current: dict[str, str] | None = None
    ) -> Redecided: ...

    async def reaccept(
        self, task_id: str, hunk_ids: Sequence[str], *, current: dict[str, str] | None = None
    ) -> Redecided: ...


class _Server(Protocol):
    @property
    def supervisor(self) -> Any: ...

    def open_document(self, uri: str) -> tuple[str, int | None] | None: ...

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]: ...


def _sides(
    td: placement.TaskDiff, files: list[FileDiff], texts: dict[str, str], reopened: set[str]
) -> tuple[list[str], list[str]]:
    """(accepted hunks whose place holds their old lines, hunks reopened here whose place
    holds their new lines again) in ``texts`` (CPU only)."""
    undone: list[str] = []
    redone: list[str] = []
    for f in files:
        base, text = td.base.get(f.path), texts.get(f.path)
        if base is None or text is None or any(h.whole_file for h in f.hunks):
            continue
        try:
            result = apply_hunks(base, f.hunks)
        except ValueError:  # the diff is not of this snapshot
            continue
        placement = Placement(base, result, text)
        for h in f.hunks:
            side = placement.held(h)
            if h.state == HunkState.ACCEPTED and side == Side.OLD:
                undone.append(h.id)
            elif h.state == HunkState.PENDING and h.id in reopened and side == Side.NEW:
                redone.append(h.id)
    return undone, redone


class Undone:
    """Follows the accepted hunks of the tasks in review; ``resend(task_id)`` sends a task's
    diff again once an undo or redo was decided."""

    def __init__(self, server: _Server, resend: Callable[[str], None]) -> None:
        self.server = server
        self.resend = resend
        self.tasks: dict[str, placement.TaskDiff] = {}  # task id → its diff, accepted hunks in it
        self.reopened: dict[str, set[str]] = {}  # task id → hunk ids reopened here
        self.reaccepted: dict[str, set[str]] = {}  # task id → hunk ids accepted again here
        # task id → the decision this server is making now (recorded before it is asked for):
        # a client's report of the same undo may be answered before this one returns.
        self.deciding: dict[str, tuple[str, set[str]]] = {}

    def watch(self, td: placement.TaskDiff) -> None:
        """Take a task's diff as sent: follow its documents while it has accepted hunks (or
        hunks reopened here that a redo may accept again)."""
        tid = td.task.id
        if not td.final or td.task.state not in DECIDED:
            self.tasks.pop(tid, None)
            self.reopened.pop(tid, None)
            self.reaccepted.pop(tid, None)
            return
        mine = self.reopened.get(tid, set())
        hunks = [h for f in td.files if f.path in td.base for h in f.hunks if not h.whole_file]
        self.tasks.pop(tid, None)
        if any(h.state == HunkState.ACCEPTED or h.id in mine for h in hunks):
            self.tasks[tid] = td  # the latest last
            while len(self.tasks) > MAX_FOLLOWED:
                oldest = next(iter(self.tasks))
                for known in (self.tasks, self.reopened, self.reaccepted):
                    known.pop(oldest, None)

    def watching(self, uris: set[str]) -> bool:
        return any(unquote(td.uri(f)) in uris for td in self.tasks.values() for f in td.files)

    async def check(self, uris: set[str]) -> None:
        """The documents ``uris`` changed: reopen what they undid, reaccept what they redid."""
        sup = self.server.supervisor
        if sup is None:
            return
        for tid, td in list(self.tasks.items()):
            files = [f for f in td.files if unquote(td.uri(f)) in uris and f.path in td.base]
            texts: dict[str, str] = {}
            for f in files:
                doc = self.server.open_document(td.uri(f))
                if doc is not None:
                    texts[f.path] = doc[0]
            if not texts:
                continue
            mine = set(self.reopened.get(tid, set()))
            undone, redone = await asyncio.to_thread(_sides, td, files, texts, mine)
            try:
                if undone:
                    self.deciding[tid] = ("reopened", set(undone))
                    done = await sup.reopen(tid, undone, current=texts)
                    self.note(tid, "reopened", done.decided)
                    self._decided(tid, "reopened", done)
                if redone:
                    self.deciding[tid] = ("reaccepted", set(redone))
                    done = await sup.reaccept(tid, redone, current=texts)
                    self.note(tid, "reaccepted", done.decided)
                    self._decided(tid, "reaccepted", done)
            except Exception as exc:  # the task moved on meanwhile: nothing to follow
                log.info("task %s: following an undo: %s", tid, exc)
            finally:
                self.deciding.pop(tid, None)

    def note(self, tid: str, word: str, ids: Sequence[str]) -> None:
        """Hunks of ``tid`` reopened (or reaccepted), here or at a client's request."""
        if not ids:
            return
        now, other = (self.reopened, self.reaccepted)[:: 1 if word == "reopened" else -1]
        now.setdefault(tid, set()).update(ids)
        other.get(tid, set()).difference_update(ids)

    def _decided(self, tid: str, word: str, done: Redecided) -> None:
        if done.decided:
            log.info("task %s: %s %s (the document's text)", tid, word, ", ".join(done.decided))
            self.resend(tid)

    def also_done(self, tid: str, word: str, done: Redecided) -> Redecided:
        """A client's own reopen (reaccept) of hunks this server already decided from the
        same document: those count as done for it too, not as kept."""
        self.note(tid, word, done.decided)
        mine = set((self.reopened if word == "reopened" else self.reaccepted).get(tid, set()))
        flight = self.deciding.get(tid)
        if flight is not None and flight[0] == word:
            mine |= flight[1]  # this server's own decision of them is still on its way back
        # (kept as "it is not accepted" / "not pending": already in the state asked for)
        ours = {h for h, why in done.kept if h in mine and why.startswith("it is not ")}
        if not ours:
            return done
        kept = [(h, r) for h, r in done.kept if h not in ours]
        return Redecided(decided=[*done.decided, *sorted(ours)], kept=kept)
