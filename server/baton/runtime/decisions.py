"""Accept and reject: the user's decisions on a task's hunks, as a journal.

Accept records what it is about to do before it touches a user file (the journal, in the
task's folder: the hunks and each file's before and after), writes each file atomically
next to itself, checking it did not change between read and rename, then stores the
decisions — with the task's new state when none is left pending — in one transaction, and
clears the journal. A broker that finds a journal whose broker is gone finishes it
(:meth:`Decisions.finish_journals`): files still as they were get the change, files that
have it count as accepted, files the user changed since keep their hunks pending. A state
disk too full for the journal refuses the accept before any user file is written.

An editor's undo of an accepted hunk is a decision too (:meth:`Decisions.reopen`): the
hunk is pending again, and an applied task back in review; a redo accepts it again
(:meth:`Decisions.reaccept`). Both read what the user's text holds at the hunk's place
(:mod:`baton.runtime.reopen`) and write no user file.

The stored diff is masked (the task's secret values). A hunk whose new text held one is
refused unless the caller says ``allow_secret``; a masked hunk that is accepted takes its
real text from the worker's result commit in git, never from the stored diff.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

from baton.core.diff import FileDiff, HunkState, find_hunk, mask_diff, reveal
from baton.core.held import Side
from baton.core.lifecycle import TaskState
from baton.core.masking import MASK
from baton.core.task import Task
from baton.faults import crash_point
from baton.runtime.book import Book
from baton.runtime.broker import TaskError, broker_alive
from baton.runtime.drafts import Drafts
from baton.runtime.overlaps import tell_overlapping
from baton.runtime.prepare import Preparer
from baton.runtime.proposals import ProposalDesk
from baton.runtime.recorded import snapshot_of
from baton.runtime.redo import redone_of
from baton.runtime.reopen import KEPT_REASONS, Redecided, keep_snapshot, sides
from baton.runtime.revision import read_rewrites
from baton.store.paths import task_dir
from baton.workspace import AcceptResult, Snapshot, accept, result_diff
from baton.workspace.git import in_background
from baton.workspace.journal import JournalError, clear_journal, recover_accept

log = logging.getLogger(__name__)
S = TaskState
JOURNAL = "accept.journal"
_OWNER = "accept.broker"  # the broker writing the journal (it may still be at work)
#: Why a hunk holding a secret value is not accepted without the override.
SECRET_REFUSAL = (
    "it writes a secret value (shown masked); accept it explicitly to take the real text "
    "(baton accept --allow-secret)"
)


class Decisions:
    def __init__(
        self,
        home: Path,
        book: Book,
        drafts: Drafts,
        preparer: Preparer,
        desk: ProposalDesk,
        after_settled: Callable[[Task], Awaitable[None]],
        secrets: Callable[[Task], Awaitable[list[str]]] | None = None,
    ) -> None:
        self.home = home
        self.book = book
        self.drafts = drafts
        self.preparer = preparer
        self.desk = desk
        self.after_settled = after_settled  # a task was applied or rejected
        self.secrets = secrets  # the values masked in the task's stored diff

    async def accept(
        self,
        task_id: str,
        hunk_ids: Sequence[str] | None = None,
        *,
        current: Mapping[str, str] | None = None,
        write: bool = True,
        applied_by_client: Callable[[AcceptResult], Coroutine[Any, Any, bool]] | None = None,
        allow_secret: bool = False,
        theirs: Sequence[str] = (),
    ) -> AcceptResult:
        """Apply all pending hunks, or the chosen ones, to the user's files.

        ``theirs`` names chosen hunks whose conflict the user settled for the agent ("take
        theirs"): they replace the user's lines at their place. A hunk the agent redid
        against the user's lines (:mod:`baton.runtime.redo`) replaces them while they
        are still as it was shown them, and so does a revised hunk over lines accepted
        before the revision (:func:`baton.runtime.revision.rewrites`).

        With ``write=False`` nothing is written: the caller (the language server) applies
        ``result.texts`` as editor edits and reports back through ``applied_by_client``.
        A hunk flagged ``secret`` is refused (it stays pending) unless ``allow_secret``.
        """
        task = await self.book.get(task_id)
        async with self.book.lock(task.id):
            task = await self.book.fresh(task.id)
            if task.state != S.REVIEW:
                raise TaskError(f"task {task.id} is {task.state}; accept is for tasks in review")
            files, _ = await self.drafts.load(task.id)
            pending = {h.id for f in files for h in f.hunks if h.state == HunkState.PENDING}
            chosen = resolve_hunks(files, hunk_ids) if hunk_ids else pending
            not_pending = chosen - pending
            if not_pending:
                raise TaskError(f"hunks already decided: {', '.join(sorted(not_pending))}")
            if task.options.get("proposal"):
                result = await self.desk.accept(task, files, chosen, current)
                await self.decide(task, dict.fromkeys(result.applied, HunkState.ACCEPTED))
                return result
            snap = snapshot_of(task)
            files, refused = await self._real_text(task, snap, files, chosen, allow_secret)
            chosen -= {h for h, _ in refused}
            if refused and not chosen:
                return AcceptResult(refused=refused)
            folder = task_dir(self.home, task.id)
            journal = folder / JOURNAL if write else None
            try:
                if journal is not None:
                    await asyncio.to_thread(_claim, folder, self.book.broker)
                # a revised hunk over lines accepted before replaces them while they are those
                over = await asyncio.to_thread(read_rewrites, task, files)
                taken: dict[str, str | None] = dict(over)
                taken |= dict.fromkeys(resolve_hunks(files, theirs) if theirs else (), None)
                result = await asyncio.to_thread(
                    accept,
                    snap,
                    files,
                    chosen,
                    scope=task.scope,
                    current=current,
                    write=write,
                    journal=journal,
                    theirs=taken,
                    redone=redone_of(task),
                )
            except (JournalError, OSError) as exc:
                raise TaskError(
                    f"could not record the accept, so nothing was written: {exc}"
                ) from None
            result.refused[:0] = refused
            if (
                applied_by_client is not None
                and result.applied
                and not await applied_by_client(result)
            ):
                return AcceptResult(conflicts=result.conflicts, refused=result.refused)
            await self.decide(task, dict.fromkeys(result.applied, HunkState.ACCEPTED))
            crash_point("accept_marked")
            if journal is not None:
                await asyncio.to_thread(clear_journal, journal)
        if result.applied and (write or applied_by_client is not None):
            await self._tell_others(task, result)
        return result

    async def _tell_others(self, task: Task, result: AcceptResult) -> None:
        """Other live tasks with pending hunks in the files just written (or applied in
        the editor) are told how theirs stand in the new text
        (:func:`baton.runtime.overlaps.tell_overlapping`)."""
        try:
            await tell_overlapping(self.book, task, result.texts)
        except Exception as exc:  # a note, never a reason for the accept to fail
            log.warning("could not tell other tasks about the accept of %s: %s", task.id, exc)

    async def _real_text(
        self,
        task: Task,
        snap: Snapshot,
        files: list[FileDiff],
        chosen: set[str],
        allow_secret: bool,
    ) -> tuple[list[FileDiff], list[tuple[str, str]]]:
        """``files`` with the chosen masked hunks' real text read back from git, and the
        hunks refused: flagged ones without ``allow_secret``, and ones git no longer has."""
        hunks = [h for f in files for h in f.hunks if h.id in chosen]
        refused = [(h.id, SECRET_REFUSAL) for h in hunks if h.secret and not allow_secret]
        masked = {h.id for h in hunks if MASK in h.old_text or MASK in h.new_text}
        masked -= {h for h, _ in refused}
        if not masked or self.secrets is None:
            return files, refused
        values = await self.secrets(task)
        if not values:  # the keyring cannot be read now: the masked text cannot be matched
            why = "its worker's secret values cannot be read now, so its real text is not known"
            return files, refused + [(h, why) for h in sorted(masked)]
        try:
            real = await asyncio.to_thread(in_background, result_diff, snap)
        except Exception as exc:
            raise TaskError(f"could not read the worker's result from git: {exc}") from None
        known = {h.id for f in mask_diff(real, values) for h in f.hunks}
        gone = "its text is no longer in the worker's result (git); run the task again"
        refused += [(h, gone) for h in sorted(masked - known)]
        return reveal(files, real, values), refused

    async def reject(self, task_id: str, hunk_ids: Sequence[str] | None = None) -> list[str]:
        task = await self.book.get(task_id)
        async with self.book.lock(task.id):
            task = await self.book.fresh(task.id)
            if task.state != S.REVIEW:
                raise TaskError(f"task {task.id} is {task.state}; reject is for tasks in review")
            self.desk.held(task)
            files, _ = await self.drafts.load(task.id)
            pending = {h.id for f in files for h in f.hunks if h.state == HunkState.PENDING}
            chosen = resolve_hunks(files, hunk_ids) if hunk_ids else pending
            chosen &= pending
            await self.decide(task, dict.fromkeys(chosen, HunkState.REJECTED))
            return sorted(chosen)

    async def reopen(
        self, task_id: str, hunk_ids: Sequence[str], *, current: Mapping[str, str] | None = None
    ) -> Redecided:
        """Accepted hunks whose place in the user's text holds their old lines again (an
        undo in the editor) are pending again; an applied task goes back to review.

        Writes no user file. The hunks' new state and the task's are one transaction; the
        snapshot ref an applied task lost is restored first (a crash between leaves the
        task applied, and the next sweep removes the ref).
        """
        task = await self.book.get(task_id)
        async with self.book.lock(task.id):
            task = await self.book.fresh(task.id)
            if task.options.get("proposal"):
                return _proposed(task, hunk_ids)
            if task.state not in (S.REVIEW, S.APPLIED):
                raise TaskError(
                    f"task {task.id} is {task.state}; reopen is for tasks in review or applied"
                )
            files, _ = await self.drafts.load(task.id)
            accepted = {h.id for f in files for h in f.hunks if h.state == HunkState.ACCEPTED}
            out = await self._held(task, files, hunk_ids, accepted, Side.OLD, "accepted", current)
            if not out.decided:
                return out
            decisions = dict.fromkeys(out.decided, HunkState.PENDING)
            word = f"reopened {len(out.decided)} hunk(s): your text no longer holds them"
            if task.state == S.APPLIED:
                snap = snapshot_of(task)
                if not await asyncio.to_thread(keep_snapshot, snap):
                    raise TaskError(
                        f"task {task.id}: its snapshot is no longer in git, so its hunks "
                        "cannot be reviewed again"
                    )
                crash_point("reopen_ref")
                await self.book.move(task, S.REVIEW, word, hunks=decisions)
            else:
                await self.book.store.call(lambda s: s.set_hunk_states(task.id, decisions))
                await self.book.log(task, word)
            return out

    async def reaccept(
        self, task_id: str, hunk_ids: Sequence[str], *, current: Mapping[str, str] | None = None
    ) -> Redecided:
        """Pending hunks whose place in the user's text holds their new lines (a redo in the
        editor) are accepted, writing nothing; the task settles when none is left pending."""
        task = await self.book.get(task_id)
        async with self.book.lock(task.id):
            task = await self.book.fresh(task.id)
            if task.options.get("proposal"):
                return _proposed(task, hunk_ids)
            if task.state != S.REVIEW:
                raise TaskError(f"task {task.id} is {task.state}; reaccept is for tasks in review")
            files, _ = await self.drafts.load(task.id)
            pending = {h.id for f in files for h in f.hunks if h.state == HunkState.PENDING}
            out = await self._held(task, files, hunk_ids, pending, Side.NEW, "pending", current)
            if out.decided:
                await self.decide(task, dict.fromkeys(out.decided, HunkState.ACCEPTED))
            return out

    async def _held(
        self,
        task: Task,
        files: list[FileDiff],
        hunk_ids: Sequence[str],
        allowed: set[str],
        side: Side,
        word: str,
        current: Mapping[str, str] | None,
    ) -> Redecided:
        """The chosen hunks in ``allowed`` whose place holds ``side``; the others, kept."""
        chosen = resolve_hunks(files, hunk_ids)
        out = Redecided(kept=[(h, f"it is not {word}") for h in sorted(chosen - allowed)])
        chosen &= allowed
        if not chosen:
            return out
        try:
            found = await asyncio.to_thread(sides, snapshot_of(task), files, chosen, current or {})
        except LookupError:
            raise TaskError(
                f"task {task.id}: its snapshot is no longer in git, so its hunks cannot be "
                "reviewed again"
            ) from None
        for f in files:
            for h in f.hunks:
                if h.id not in chosen:
                    continue
                if found.get(h.id) == side:
                    out.decided.append(h.id)
                else:
                    out.kept.append((h.id, KEPT_REASONS[found.get(h.id)]))
        return out

    async def decide(self, task: Task, decisions: dict[str, HunkState]) -> None:
        """Store ``decisions``; when no hunk is left pending, the task's end in the same
        transaction (applied if any hunk was accepted, else rejected)."""
        files, _ = await self.drafts.load(task.id)
        states = [decisions.get(h.id, h.state) for f in files for h in f.hunks]
        settles = HunkState.PENDING not in states
        if not settles or task.id in self.desk.waiting:
            if decisions:
                await self.book.store.call(lambda s: s.set_hunk_states(task.id, decisions))
            if settles:  # a proposal: its proposer gets the answer and writes the file
                files, _ = await self.drafts.load(task.id)
                await self.desk.answer(task, files)
            return
        applied = HunkState.ACCEPTED in states
        target, word = (S.APPLIED, "accepted") if applied else (S.REJECTED, "rejected")
        await self.book.move(task, target, word, task.completion, hunks=dict(decisions))
        if not applied:
            crash_point("reject_marked")
        await self.preparer.cleanup(task)
        await self.after_settled(task)

    async def finish_journals(self) -> list[str]:
        """Finish the accepts a broker left half done (its journal is there, it is gone)."""
        found: list[Task] = await self.book.store.call(
            lambda s: s.list_tasks(states=[str(S.REVIEW), str(S.APPLIED)], limit=None)
        )
        done = []
        for task in found:
            folder = task_dir(self.home, task.id)
            journal = folder / JOURNAL
            if not await asyncio.to_thread(journal.exists):
                continue
            owner = await asyncio.to_thread(_claimed_by, folder)
            if owner and owner != self.book.broker and broker_alive(owner):
                continue  # that broker is still writing it
            async with self.book.lock(task.id):
                await self._finish(task, journal)
            done.append(task.id)
        return done

    async def _finish(self, task: Task, journal: Path) -> None:
        recovered = await asyncio.to_thread(recover_accept, journal, snapshot_of(task).root)
        if recovered is None:
            return
        note = f"finished an accept the broker left half done: {len(recovered.applied)} hunk(s)"
        if recovered.not_applied:
            note += f"; {len(recovered.not_applied)} left pending (the file changed since)"
        await self.book.log(task, note)
        fresh = await self.book.fresh(task.id)
        if fresh.state == S.REVIEW:
            await self.decide(fresh, dict.fromkeys(recovered.applied, HunkState.ACCEPTED))
        await asyncio.to_thread(clear_journal, journal)


def _proposed(task: Task, hunk_ids: Sequence[str]) -> Redecided:
    """A proposal's hunks stay as they are: Baton wrote none of them (its proposer writes
    the file once every hunk is decided), so no undo took one back."""
    why = f"it is an edit {task.worker} proposed: Baton wrote nothing for it"
    return Redecided(kept=[(h, why) for h in hunk_ids])


def resolve_hunks(files: Sequence[FileDiff], ids: Sequence[str]) -> set[str]:
    chosen: set[str] = set()
    for hid in ids:
        found = find_hunk(files, hid)
        if found is None:
            known = ", ".join(h.id for f in files for h in f.hunks) or "none"
            raise TaskError(f"unknown hunk {hid!r}; this task's hunks: {known}")
        chosen.add(found[1].id)
    return chosen


def _claim(folder: Path, broker: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / _OWNER).write_text(json.dumps({"broker": broker}), encoding="utf-8")


def _claimed_by(folder: Path) -> str | None:
    try:
        return str(json.loads((folder / _OWNER).read_text(encoding="utf-8"))["broker"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
