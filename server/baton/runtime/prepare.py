"""Preparing a task: its snapshot, its worktree and its brief — each step safe to repeat.

A broker that dies while preparing leaves a task in ``preparing``; the next one calls
:meth:`Preparer.prepare` again and it picks up where the record stops: a recorded
snapshot is kept (it is what the user saw when delegating; a fresh one would take edits
made since, and the diff would undo them), a worktree is reused only when it still is
that snapshot untouched (:func:`baton.workspace.worktree.worktree_fits`), and the brief
is built from what the task records (diagnostics, rules, unsaved buffers), never from a
request that is gone.

The worktree comes from the warm pool when it has one for the repository
(:mod:`baton.workspace.pool`: a ready checkout moved to the snapshot, checked, else a fresh
one); a checkout the task took from the pool before a crash is finished, not made again.
After each task of a repository with a pool, the pool is refilled in the background
(:class:`baton.workspace.refill.Refiller`), once no task is being prepared; so is the warm
copy of a large repository's index the next snapshot starts from
(:mod:`baton.workspace.warmseed`), when the index has changed.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from baton.config.watch import SettingsCache
from baton.core.brief import BriefParts, Selection, build_brief
from baton.core.task import Task
from baton.faults import crash_point
from baton.runtime.book import Book
from baton.runtime.recorded import (
    diagnostics_of,
    editor_rules_of,
    has_snapshot,
    overlays_of,
    snapshot_of,
)
from baton.store import Store
from baton.store.paths import task_dir, worktrees_dir
from baton.workspace import Snapshot, create_worktree, remove_worktree, take_snapshot
from baton.workspace.git import in_background
from baton.workspace.pool import PoolLimits, claim, discard, pooled, take, tracked_files
from baton.workspace.refill import REFILL_DELAY, Refiller
from baton.workspace.warmseed import SEEDS, needs_warming

log = logging.getLogger(__name__)


class Preparer:
    def __init__(
        self,
        home: Path,
        book: Book,
        settings: SettingsCache,
        *,
        pool: PoolLimits | None = None,
        refill_delay: float = REFILL_DELAY,
    ) -> None:
        self.home = home
        self.book = book
        self.settings = settings
        self.pool = pool  # None: as the settings say
        self.refills = Refiller(worktrees_dir(home), delay=refill_delay)

    async def prepare(self, task: Task) -> None:
        """Make sure the task has its snapshot, its worktree and its brief (idempotent)."""
        with self.refills.preparing():
            await self._prepare(task)

    async def close(self) -> None:
        """Stop refilling the pool (a checkout being made is finished first)."""
        await asyncio.to_thread(self.refills.close)

    def pool_limits(self, root: str) -> PoolLimits:
        """The warm pool's limits for tasks in ``root``."""
        if self.pool is not None:
            return self.pool
        settings = self.settings.last_good(root)
        if settings is None:
            return PoolLimits()
        return PoolLimits(size=settings.pool_size, max_bytes=settings.pool_max_bytes)

    def _checkout(
        self, snap: Snapshot, task_id: str, limits: PoolLimits, claimed: Path | None = None
    ) -> tuple[Path, str]:
        """The task's checkout of ``snap`` and where it came from (``pool`` or ``fresh``);
        ``claimed``: the pool checkout :func:`~baton.workspace.pool.claim` took for it."""
        wts = worktrees_dir(self.home)
        path, source = take(snap, task_id, wts, limits, claimed=claimed), "pool"
        if path is None:
            path, source = create_worktree(snap, task_id, wts), "fresh"
        if pooled(snap.git_dir, limits):
            self.refills.ask(snap.git_dir, snap.commit, limits)
        seeds = self.home / SEEDS  # where take_snapshot looks for them
        large = tracked_files(snap.git_dir) >= limits.min_files
        if not snap.private and large and needs_warming(snap.git_dir, seeds):
            self.refills.warm(snap.git_dir, snap.root, seeds)
        return path, source

    async def _prepare(self, task: Task) -> None:
        folder = task_dir(self.home, task.id)
        limits = self.pool_limits(task.root)
        claimed: Path | None = None
        if has_snapshot(task):
            snap = snapshot_of(task)
            await asyncio.to_thread(folder.mkdir, parents=True, exist_ok=True)
        else:
            crash_point("before_snapshot")
            # A pool checkout is taken and checked while the snapshot is taken (the part of
            # the take that needs no snapshot); the move to the snapshot follows it. A
            # repository too small for a pool (its index's header says) needs no such thread.
            claiming: asyncio.Future[Path | None] | None = None
            if _may_have_pool(Path(task.root), limits):
                claiming = asyncio.ensure_future(
                    asyncio.to_thread(
                        in_background, claim, Path(task.root), task.id, worktrees_dir(self.home),
                        limits,
                    )
                )  # fmt: skip
            try:
                snap = await asyncio.to_thread(in_background, self._snapshot, task, folder)
            except BaseException:
                if claiming is not None:
                    await self._drop(claiming)
                raise
            try:
                claimed = await claiming if claiming is not None else None
            except Exception as exc:  # the take below finishes whatever the claim left
                log.warning("task %s: claiming a pool checkout failed: %s", task.id, exc)
            task.snapshot, task.base_ref = snap.commit, snap.base
            task.options["snapshot"] = snap.to_json()
            await self.book.save(task)
            crash_point("after_snapshot")
            for note in snap.notes:
                await self.book.log(task, note)
        # What the brief needs from the store is read while the checkout is made.
        memory = asyncio.ensure_future(self.book.store.call(lambda s: s.list_memory(task.root)))
        try:
            worktree, source = await asyncio.to_thread(
                in_background, self._checkout, snap, task.id, limits, claimed
            )
        except BaseException:
            memory.cancel()
            raise
        task.worktree, task.branch = str(worktree), snap.branch
        task.options["checkout"] = source
        task.brief = await self._brief(task, snap, worktree, [text for _, text in await memory])
        await self.book.save(task)
        crash_point("after_worktree")

    def _snapshot(self, task: Task, folder: Path) -> Snapshot:
        """The task's folder made, and the snapshot of its root with its unsaved buffers (one
        thread's work: each hop to a thread and back costs the task a wake-up)."""
        folder.mkdir(parents=True, exist_ok=True)
        overlays = overlays_of(task, folder)
        return take_snapshot(
            Path(task.root), task.id, overlays=overlays or None, state_home=self.home
        )

    async def _drop(self, claiming: asyncio.Future[Path | None]) -> None:
        """Put back out of the way the pool checkout claimed for a snapshot that failed."""
        try:
            claimed = await asyncio.shield(claiming)
        except Exception:
            return
        if claimed is not None:
            await asyncio.to_thread(discard, claimed, worktrees_dir(self.home))

    async def _brief(self, task: Task, snap: Snapshot, worktree: Path, memory: list[str]) -> str:
        settings = self.settings.last_good(task.root)
        selection = None
        if task.targets and task.targets[0].start_line is not None:
            t = task.targets[0]
            text = await asyncio.to_thread(_read_text, worktree / snap.prefix / t.path)
            lines = text.splitlines(keepends=True)
            start, end = t.start_line or 1, t.end_line or t.start_line or 1
            selection = Selection(t.path, start, end, "".join(lines[start - 1 : end]))
        project_rules = list(settings.brief_rules) if settings else []
        rules = project_rules + [r for r in editor_rules_of(task) if r not in project_rules]
        return build_brief(
            BriefParts(
                instruction=task.instruction,
                action=task.action,
                selection=selection,
                diagnostics=diagnostics_of(task),
                memory=memory,
                rules=rules,
                scope=task.scope,
            )
        )

    async def cleanup(self, task: Task) -> None:
        """Remove the task's worktree, branch and refs (it is settled)."""
        if not task.worktree:
            return
        snap = snapshot_of(task)
        try:
            await asyncio.to_thread(
                in_background, remove_worktree, snap, task.id, Path(task.worktree)
            )
        except Exception as exc:
            await self.book.log(task, f"could not remove the worktree: {exc}", "warning")


def _may_have_pool(root: Path, limits: PoolLimits) -> bool:
    """False only when the folder is the top of a repository too small for a pool (its
    index's header says how many files it tracks); else the claim looks."""
    git_dir = root / ".git"
    return not git_dir.is_dir() or pooled(git_dir, limits)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


__all__ = ["Preparer", "Store"]
