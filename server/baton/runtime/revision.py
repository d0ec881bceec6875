"""Talk back from the diff: comments on a task in review become its session's next turn.

:meth:`Revisions.revise` takes the user's comments (file, lines, text, the hunk they are on)
and the reasons of the hunks they reject, composes one prompt that quotes each with its
file:lines and the proposed lines (:func:`baton.core.revision.revision_prompt`), and
continues the same session with it as a ``reply`` turn. It records on the task what the
review looked like (``options["revision"]``: the turn, each hunk's decision then, the
comments), so the next result can be shown as an interdiff: hunks that are the same change
keep their decisions (they are stored by hunk id), the others are new since that review.
Rejected hunks stay rejected: a reason is a rejection that is also said to the agent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from baton.core.diff import FileDiff, Hunk, HunkState, find_hunk, split_lines
from baton.core.events import EventType
from baton.core.lifecycle import TaskState
from baton.core.revision import (
    Comment,
    Interdiff,
    interdiff,
    nothing_to_review,
    over_accepted,
    reviewed,
    revision_prompt,
)
from baton.core.task import Task
from baton.runtime.book import Book
from baton.runtime.broker import TaskError
from baton.runtime.drafts import Drafts
from baton.runtime.recorded import snapshot_of
from baton.workspace import checkpoints, snapshot_text
from baton.workspace.git import in_background

S = TaskState
#: The most comments one revision takes (each is quoted in the prompt).
MAX_COMMENTS = 100
Reply = Callable[..., Awaitable[Task]]


class Revisions:
    def __init__(self, book: Book, drafts: Drafts, reply: Reply) -> None:
        self.book = book
        self.drafts = drafts
        self.reply = reply  # Supervisor.reply: the same session's next turn

    async def revise(
        self,
        task_id: str,
        comments: Sequence[Comment],
        rejections: Mapping[str, str] | None = None,
    ) -> Task:
        """Send ``comments`` and the reasons of ``rejections`` (hunk id → reason; those
        hunks are rejected) to the task's agent as its next turn."""
        rejections = dict(rejections or {})
        if not comments and not rejections:
            raise TaskError("a revision needs a comment or a rejected hunk's reason")
        if len(comments) > MAX_COMMENTS:
            raise TaskError(f"at most {MAX_COMMENTS} comments in one revision")
        task = await self.book.get(task_id)
        if task.state != S.REVIEW:
            raise TaskError(f"task {task.id} is {task.state}; comments are for tasks in review")
        files, _ = await self.drafts.load(task.id)
        by_id = {h.id: (f.path, h) for f in files for h in f.hunks}
        comments = [_resolved(files, c) for c in comments]
        rejected = _rejected(files, rejections)
        quoted = await asyncio.to_thread(_quote_lines, task, comments)
        prompt = revision_prompt(comments, [(h, p, why) for p, h, why in rejected], by_id, quoted)
        if _shown_turn(task) != _turn_of(task):
            prompt = (
                f"Your working folder was set back to your result of turn {_shown_turn(task)}; "
                "the later changes are not there.\n\n" + prompt
            )
        turn, shown = _turn_of(task) + 1, _shown_turn(task)
        snap = snapshot_of(task)
        kept = await asyncio.to_thread(in_background, checkpoints.keep_turn, snap, shown)
        decisions = reviewed(files) | {h.id: str(HunkState.REJECTED) for _, h, _ in rejected}
        record: dict[str, Any] = {
            "turn": turn,
            "before": decisions,
            # the accepted hunks, in the user's files: a rewrite of one is a change of them
            "accepted": {
                h.id: {"path": f.path, "hunk": h.to_json()}
                for f in files
                for h in f.hunks
                if h.state == HunkState.ACCEPTED and not h.whole_file
            },
            "comments": [c.to_json() for c in comments],
            "rejections": {h.id: why for _, h, why in rejected},
            "checkpoint": kept,  # the reviewed result, refs/baton/turns/<shown>/<id>
        }
        task = await self.reply(task.id, prompt, options={"revision": record})
        if rejected:
            states = {h.id: HunkState.REJECTED for _, h, _ in rejected}
            await self.book.store.call(lambda s: s.set_hunk_states(task.id, states))
        return task

    async def checkpoints(self, task_id: str) -> list[dict[str, Any]]:
        """The task's kept turn results: ``[{turn, commit, shown}]`` (``shown``: the one
        its diff is now)."""
        task = await self.book.get(task_id)
        snap = snapshot_of(task)
        kept = await asyncio.to_thread(checkpoints.turns, snap.git_dir, task.id)
        shown = _shown_turn(task)
        out = [{"turn": t, "commit": c, "shown": t == shown} for t, c in kept.items()]
        if shown not in kept:
            out.append({"turn": shown, "commit": None, "shown": True})
        return out

    async def step_back(self, task_id: str, turn: int) -> Task:
        """Show an earlier turn's result as the task's diff (its checkout gets that result's
        files); the result shown until now is kept, so the review can step forward again.
        Refused when a hunk accepted since is not in that result (undo it first)."""
        task = await self.book.get(task_id)
        async with self.book.lock(task.id):
            task = await self.book.fresh(task.id)
            if task.state != S.REVIEW:
                raise TaskError(f"task {task.id} is {task.state}; stepping back is for review")
            if not task.worktree or not await asyncio.to_thread(Path(task.worktree).is_dir):
                raise TaskError(f"task {task.id}'s checkout was removed; nothing to step back to")
            snap = snapshot_of(task)
            kept = await asyncio.to_thread(checkpoints.turns, snap.git_dir, task.id)
            shown = _shown_turn(task)
            if turn not in kept or turn == shown:
                have = ", ".join(str(t) for t in kept if t != shown) or "none"
                raise TaskError(f"task {task.id} has no other turn {turn}; kept turns: {have}")
            before, _ = await self.drafts.load(task.id)
            now = await asyncio.to_thread(in_background, checkpoints.keep_turn, snap, shown)
            worktree = Path(task.worktree)
            await asyncio.to_thread(
                in_background, checkpoints.restore_turn, snap, worktree, kept[turn]
            )
            files = await self.drafts.compute(task, final=True)
            ids = {h.id for f in files for h in f.hunks}
            lost = [
                h.id
                for f in before
                for h in f.hunks
                if h.state == HunkState.ACCEPTED and h.id not in ids
            ]
            if lost and now is not None:
                await asyncio.to_thread(
                    in_background, checkpoints.restore_turn, snap, worktree, now
                )
                await self.drafts.compute(task, final=True)
                raise TaskError(
                    f"turn {turn}'s result does not have hunk(s) {', '.join(lost)}, accepted "
                    "since; undo them first"
                )
            task.options["revision"] = {
                "turn": _turn_of(task),
                "shown": turn,
                "before": reviewed(before),
            }
            await self.book.save(task)
            await self.book.log(task, f"the review stepped back to turn {turn}'s result")
            return task


def _shown_turn(task: Task) -> int:
    record = task.options.get("revision")
    if not isinstance(record, dict):
        return 1
    return int(record.get("shown") or record.get("turn") or 1)


def since_last_review(task: Task, files: Sequence[FileDiff]) -> Interdiff | None:
    """The task's hunks against its previous review, when it was revised; else None."""
    record = task.options.get("revision")
    if not isinstance(record, dict) or not isinstance(record.get("before"), dict):
        return None
    return interdiff(_shown_turn(task), record["before"], files)


async def tell_result(book: Book, drafts: Drafts, task: Task) -> str | None:
    """Once a revision turn has settled: when it left nothing to decide (it changed nothing,
    or no hunk is pending), say so — a ``log`` event with the revision's turn, which the
    transcript and the editors show — and record it on the task; the sentence, or None.
    Said once per revision."""
    record = task.options.get("revision")
    if not isinstance(record, dict) or "comments" not in record or "told" in record:
        return None
    files, _ = await drafts.load(task.id)
    since = since_last_review(task, files)
    told = nothing_to_review(since, files) if since is not None else None
    record["told"] = told or ""
    await book.save(task)
    if told:
        data = {"level": "info", "message": told, "revision": int(record["turn"])}
        await book.emit(task, EventType.LOG, data)
    return told


def accepted_before(task: Task, path: str, now: Collection[str]) -> list[Hunk]:
    """The hunks of ``path`` accepted when the task was last revised that its result no
    longer has (``now``: the ids it has)."""
    record = task.options.get("revision")
    kept = record.get("accepted") if isinstance(record, dict) else None
    if not isinstance(kept, dict):
        return []
    out = []
    for hid, rec in kept.items():
        if hid in now or not isinstance(rec, dict) or rec.get("path") != path:
            continue
        try:
            out.append(Hunk.from_json(rec["hunk"]))
        except (KeyError, TypeError, ValueError):
            continue
    return out


def rewrites(
    task: Task, files: Sequence[FileDiff], base: Mapping[str, str | None]
) -> dict[str, str]:
    """Pending hunks of ``files`` that rewrite lines accepted before the revision: hunk id →
    those accepted lines (see :func:`baton.core.revision.over_accepted`); ``base`` maps a
    path to its snapshot text."""
    now = {h.id for f in files for h in f.hunks}
    out: dict[str, str] = {}
    for f in files:
        text = base.get(f.path)
        accepted = accepted_before(task, f.path, now) if text is not None else []
        if text is not None and accepted:
            out.update(over_accepted(f.hunks, accepted, text))
    return out


def read_rewrites(task: Task, files: Sequence[FileDiff]) -> dict[str, str]:
    """:func:`rewrites`, reading the snapshot texts it needs (blocking I/O)."""
    now = {h.id for f in files for h in f.hunks}
    wanted = [f for f in files if accepted_before(task, f.path, now)]
    if not wanted:
        return {}
    snap = snapshot_of(task)
    return rewrites(
        task, wanted, {f.path: snapshot_text(snap, f.old_path or f.path) for f in wanted}
    )


def _turn_of(task: Task) -> int:
    record = task.options.get("revision")
    return int(record.get("turn", 1)) if isinstance(record, dict) else 1


def _resolved(files: Sequence[FileDiff], c: Comment) -> Comment:
    if not c.text.strip():
        raise TaskError(f"an empty comment on {c.path}:{c.start}")
    if c.hunk_id is None:
        if c.start < 1 or c.end < c.start:
            raise TaskError(f"a comment on {c.path} needs lines start ≤ end (1-based)")
        return c
    found = find_hunk(files, c.hunk_id)
    if found is None:
        raise TaskError(f"unknown hunk {c.hunk_id!r} in a comment")
    return Comment(found[0].path, c.start, c.end, c.text, found[1].id)


def _rejected(
    files: Sequence[FileDiff], rejections: Mapping[str, str]
) -> list[tuple[str, Hunk, str]]:
    out = []
    for hid, why in rejections.items():
        found = find_hunk(files, hid)
        if found is None:
            raise TaskError(f"unknown hunk {hid!r} to reject")
        f, h = found
        if h.state == HunkState.ACCEPTED:
            raise TaskError(f"hunk {h.id} is accepted; undo it before rejecting it")
        out.append((f.path, h, why.strip()))
    return out


def _quote_lines(task: Task, comments: Sequence[Comment]) -> dict[int, str]:
    """The lines each comment outside a hunk is on, from the file as the user has it."""
    root: Path = snapshot_of(task).root
    out: dict[int, str] = {}
    for n, c in enumerate(comments):
        if c.hunk_id is not None:
            continue
        path = (root / c.path).resolve()
        if not path.is_relative_to(root.resolve()) or not path.is_file():
            continue
        try:
            lines = split_lines(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        out[n] = "".join(lines[c.start - 1 : c.end])
    return out
