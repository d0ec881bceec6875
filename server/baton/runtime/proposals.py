"""Proposals: an edit another tool proposes, reviewed in the editor like a task's result.

A Claude Code session in a terminal, connected to Baton as its IDE, proposes the whole new
contents of one file and waits for the answer. The broker records the proposal as a task —
a snapshot of the folder with the file as it was, that one file's diff, state ``review`` —
so every surface shows it and decides it hunk by hunk, as usual. Baton itself writes
nothing: once every hunk is decided the proposer gets the final contents (the accepted
hunks merged into the file as it is at that moment, so edits the user saved meanwhile
stay) or a rejection, and writes the file itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.core.diff import (
    FileDiff,
    FileStatus,
    Hunk,
    HunkState,
    compute_hunks,
    count_lines,
    split_lines,
    whole_file_hunk,
)
from baton.core.lifecycle import Completion, TaskState
from baton.core.task import Task, new_task_id
from baton.runtime.book import Book, state_event
from baton.runtime.broker import TaskError, broker_alive
from baton.runtime.drafts import Drafts
from baton.workspace import AcceptResult, take_snapshot
from baton.workspace.apply import merge_hunks

S = TaskState


@dataclass
class Proposal:
    """A proposal waiting for its decision, held by the broker that received it."""

    task_id: str
    path: str  # relative to the snapshot's root
    file: Path  # absolute
    base: str | None  # the file when proposed; None for a new file
    new: str
    decided: asyncio.Future[str | None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


def proposal_diff(path: str, base: str | None, new: str) -> list[FileDiff]:
    """The diff of one proposed file: a whole-file hunk for a new file, else line hunks."""
    if base is None:
        hunk = whole_file_hunk(path, "", new)
        return [FileDiff(path, FileStatus.ADDED, (hunk,), added=len(split_lines(new)))]
    hunks = compute_hunks(path, base, new)
    if not hunks:
        return []
    added, removed = count_lines(hunks)
    return [FileDiff(path, FileStatus.MODIFIED, hunks, added=added, removed=removed)]


def read_current(file: Path) -> str | None:
    """The file's text now; None when it does not exist (or is not a readable text file)."""
    try:
        return file.read_bytes().decode("utf-8", "surrogateescape")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def final_text(
    proposal: Proposal, accepted: Sequence[Hunk], on_disk: str | None
) -> tuple[str | None, list[tuple[str, str]]]:
    """The file with the ``accepted`` hunks, merged into ``on_disk`` (what the file is now).

    Returns the text (None when nothing could be kept) and ``(hunk id, reason)`` for each
    accepted hunk that no longer fits the file.
    """
    if not accepted:
        return None, []
    if proposal.base is None:  # a new file is taken whole
        if on_disk is not None and on_disk != proposal.new:
            why = f"{proposal.path} was created meanwhile; the proposal would overwrite it"
            return None, [(h.id, why) for h in accepted]
        return proposal.new, []
    if on_disk is None:
        why = f"{proposal.path} was deleted meanwhile"
        return None, [(h.id, why) for h in accepted]
    merged, done, conflicts = merge_hunks(proposal.base, on_disk, accepted)
    return (merged if done else None), conflicts


class ProposalDesk:
    """The proposals this broker received and waits to answer."""

    def __init__(self, home: Path, book: Book, drafts: Drafts) -> None:
        self.home = home
        self.book = book
        self.drafts = drafts
        self.waiting: dict[str, Proposal] = {}

    async def propose(
        self,
        file: str | Path,
        base: str | None,
        new: str,
        *,
        root: str | Path,
        title: str,
        source: str,
        meta: Mapping[str, Any] | None = None,
    ) -> tuple[Task, asyncio.Future[str | None]]:
        """Record an edit another tool proposes.

        ``file`` (absolute, inside ``root``) would go from ``base`` (its text now; None for
        a new file) to ``new``. Returns the task, in review, and a future that resolves with
        the final contents once every hunk is decided (None: rejected). An unchanged file
        resolves at once with ``new``. Nothing is ever written by Baton for a proposal.
        """
        file, top = Path(file).resolve(), Path(root).resolve()
        rel_root = file.relative_to(top).as_posix()  # raises ValueError outside the root
        now = time.time()
        task = Task(
            id=new_task_id(now),
            instruction=title,
            root=str(top),
            title=title,
            worker=source,
            provider=source,
            state=S.RUNNING,
            isolation="none",
            route_reason=f"proposed by {source}",
            options={"proposal": {"broker": self.book.broker, "file": str(file), **(meta or {})}},
            created_at=now,
            updated_at=now,
        )
        await self.book.insert(task)
        await self.book.bus.emit([state_event(task.id, None, S.RUNNING, f"proposed by {source}")])
        decided: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        try:
            overlays = {rel_root: base} if base is not None else None
            snap = await asyncio.to_thread(
                take_snapshot, top, task.id, overlays=overlays, state_home=self.home
            )
            task.snapshot, task.base_ref = snap.commit, snap.base
            task.options["snapshot"] = snap.to_json()
            path = file.relative_to(snap.root).as_posix()
            files = proposal_diff(path, base, new)
            await self.drafts.record(task, files, final=True)
        except asyncio.CancelledError:  # the proposer gave up while it was being recorded
            await asyncio.shield(self.book.move(task, S.CANCELLED, "withdrawn by its proposer"))
            raise
        except Exception as exc:
            await self.book.move(task, S.FAILED, f"could not record the proposal: {exc}")
            raise TaskError(f"could not record the proposal: {exc}") from exc
        if not files:
            await self.book.move(
                task, S.ANSWERED, "the proposal changes nothing", Completion.NO_CHANGES
            )
            decided.set_result(new)
            return task, decided
        self.waiting[task.id] = Proposal(task.id, path, file, base, new, decided)
        await self.book.move(task, S.REVIEW, f"proposed changes to {path}", Completion.COMPLETED)
        return task, decided

    async def withdraw(self, task_id: str, reason: str) -> None:
        """The proposer no longer waits (it was answered elsewhere, or went away)."""
        proposal = self.waiting.pop(task_id, None)
        if proposal is None:
            return
        if not proposal.decided.done():
            proposal.decided.cancel()
        async with self.book.lock(task_id):
            task = await self.book.fresh(task_id)
            if task.state == S.REVIEW:
                await self.book.move(task, S.CANCELLED, reason)

    def held(self, task: Task) -> Proposal | None:
        """The proposal behind ``task`` if this broker holds it; None for a task."""
        if not task.options.get("proposal"):
            return None
        proposal = self.waiting.get(task.id)
        if proposal is None:
            raise TaskError(
                f"task {task.id} is a proposal another broker is waiting to answer: decide it "
                "in the editor that shows it"
            )
        return proposal

    async def accept(
        self,
        task: Task,
        files: Sequence[FileDiff],
        chosen: set[str],
        current: Mapping[str, str] | None,
    ) -> AcceptResult:
        """Accept hunks of a proposal: nothing is written; they are merged when answering.

        A hunk that no longer fits the file as it is now (on disk, or in the editor's buffer
        when that has unsaved edits: the proposer will write the file) stays pending.
        """
        proposal = self.held(task)
        assert proposal is not None
        on_disk = await asyncio.to_thread(read_current, proposal.file)
        unsaved = (current or {}).get(proposal.path)
        if unsaved is not None and unsaved != on_disk:
            why = f"{proposal.path} has unsaved edits in the editor: save them, then accept"
            return AcceptResult(conflicts=[(h, why) for h in sorted(chosen)])
        accepted = [
            h for f in files for h in f.hunks if h.state == HunkState.ACCEPTED or h.id in chosen
        ]
        text, conflicts = await asyncio.to_thread(final_text, proposal, accepted, on_disk)
        clash = {h for h, _ in conflicts}
        result = AcceptResult(
            applied=sorted(chosen - clash),
            conflicts=[(h, why) for h, why in conflicts if h in chosen],
        )
        if text is not None and result.applied:
            result.texts[proposal.path] = text
        return result

    async def answer(self, task: Task, files: Sequence[FileDiff]) -> None:
        """Every hunk is decided: give the proposer the final contents, or the rejection."""
        proposal = self.waiting.pop(task.id)
        accepted = [h for f in files for h in f.hunks if h.state == HunkState.ACCEPTED]
        on_disk = await asyncio.to_thread(read_current, proposal.file)
        text, conflicts = await asyncio.to_thread(final_text, proposal, accepted, on_disk)
        for hid, why in conflicts:
            await self.book.log(task, f"hunk {hid} left out: {why}", "warning")
        if text is None:
            await self.book.move(task, S.REJECTED, "rejected", task.completion)
        else:
            await self.book.move(
                task, S.APPLIED, f"accepted: {task.worker} writes it", task.completion
            )
        if not proposal.decided.done():
            proposal.decided.set_result(text)

    async def withdraw_orphans(self) -> None:
        """Proposals in review whose broker is gone: nobody waits for their answer now."""
        found = await self.book.store.call(
            lambda s: s.list_tasks(states=[str(S.REVIEW)], limit=10_000)
        )
        for task in found:
            meta = task.options.get("proposal")
            if not isinstance(meta, dict) or task.id in self.waiting:
                continue
            broker = meta.get("broker")
            if broker == self.book.broker or (isinstance(broker, str) and broker_alive(broker)):
                continue
            async with self.book.lock(task.id):
                fresh = await self.book.fresh(task.id)
                if fresh.state == S.REVIEW:
                    await self.book.move(fresh, S.CANCELLED, "its proposer is gone (broker ended)")

    async def close(self) -> None:
        for task_id in list(self.waiting):  # nobody will answer them now
            with contextlib.suppress(Exception):
                await self.withdraw(task_id, "the broker that held it stopped")
