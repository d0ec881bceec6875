"""What Baton keeps on disk, kept in bounds: ``baton clean`` and the sweep a broker makes when
it starts alone.

- **Settled for good** (applied, rejected, answered) and **orphans** (a checkout or ref whose
  task the store does not have): checkout, branch and ``refs/baton/*`` removed
  (:func:`baton.workspace.sweep_orphans`, which reads the store only after listing what is
  on disk, so a task starting meanwhile keeps its checkout).
- **Failed, cancelled and interrupted** tasks keep their checkout ``[retention]
  checkout_days`` for a retry in it; then the task forgets its checkout and snapshot
  (recorded first), and both go with its refs. Its diff stays in the store; a retry starts
  from a new snapshot of the user's files, as a first turn.
- **Events** of tasks settled more than ``[retention] keep_days`` ago are pruned, all but
  each task's last (:mod:`baton.store.retention`).
- ``baton clean`` also empties the warm pool.

Checkouts are removed only while no other broker runs: another one could be preparing or
retrying a task right now. Every step can be repeated: a broker killed halfway leaves what
the next sweep finishes.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.config.watch import SettingsCache
from baton.core.lifecycle import TaskState
from baton.core.task import Task
from baton.runtime.book import Book
from baton.runtime.broker import broker_alive
from baton.runtime.recorded import has_snapshot
from baton.store import Store
from baton.store.paths import worktrees_dir
from baton.store.retention import DAY, prune_events
from baton.workspace import Snapshot, Swept, remove_worktree, sweep_orphans
from baton.workspace.git import in_background
from baton.workspace.pool import clear
from baton.workspace.warmseed import SEEDS
from baton.workspace.warmseed import clear as clear_seeds

S = TaskState
#: Tasks whose checkout and refs nothing needs any more.
DONE_WITH = frozenset({S.APPLIED, S.REJECTED, S.ANSWERED})
#: Settled tasks that keep their checkout for a while, for a retry in it.
RETRIED_IN_PLACE = frozenset({S.FAILED, S.CANCELLED, S.INTERRUPTED})
#: Where an expired task keeps its snapshot until its checkout and refs are removed.
EXPIRED = "expired_snapshot"


@dataclass
class Cleaned:
    """What one clean removed."""

    swept: Swept = field(default_factory=Swept)
    expired: list[str] = field(default_factory=list)  # tasks whose checkout aged out
    pruned_tasks: int = 0
    pruned_events: int = 0
    pool: tuple[int, int] = (0, 0)  # ready checkouts removed, their bytes
    seeds: tuple[int, int] = (0, 0)  # warm copies of indexes removed, their bytes
    not_alone: bool = False  # another broker runs: checkouts were left alone

    def to_json(self) -> dict[str, Any]:
        return {
            "worktrees": self.swept.worktrees,
            "refs": self.swept.refs,
            "expired": self.expired,
            "events": {"tasks": self.pruned_tasks, "removed": self.pruned_events},
            "pool": {"removed": self.pool[0], "bytes": self.pool[1]},
            "seeds": {"removed": self.seeds[0], "bytes": self.seeds[1]},
            "checkouts_left": self.not_alone,
        }


class Cleaner:
    def __init__(self, home: Path, book: Book, settings: SettingsCache) -> None:
        self.home = home
        self.book = book
        self.settings = settings

    async def alone(self) -> bool:
        """Whether no other live broker shares this store."""
        brokers = await self.book.store.call(lambda s: s.live_brokers(max_age=float("inf")))
        return not any(b.id != self.book.broker and broker_alive(b.id) for b in brokers)

    async def sweep(self) -> Swept:
        """Remove checkouts and refs of tasks settled for good, and orphans (when alone)."""
        keep_states = [str(x) for x in TaskState if x not in DONE_WITH]

        def keep() -> set[str]:
            with Store(self.book.store.store.path) as store:
                return {t.id for t in store.list_tasks(states=keep_states, limit=None)}

        return await asyncio.to_thread(
            in_background, sweep_orphans, self.home, worktrees_dir(self.home), keep
        )

    async def expire(self, now: float | None = None, *, checkouts: bool = True) -> Cleaned:
        """Apply ``[retention]``: old settled tasks' events and (``checkouts``: when no other
        broker runs) old failed tasks' checkouts."""
        done = Cleaned()
        settings = await asyncio.to_thread(self.settings.user_level)
        if settings is None:  # a broken user config: nothing is removed on its account
            return done
        now = time.time() if now is None else now
        if checkouts and settings.checkout_days:
            done.expired = await self._expire_checkouts(now - settings.checkout_days * DAY)
        if settings.keep_days:
            before = now - settings.keep_days * DAY
            done.pruned_tasks, done.pruned_events = await self.book.store.call(
                lambda s: prune_events(s, before)
            )
        return done

    async def _expire_checkouts(self, before: float) -> list[str]:
        states = [str(x) for x in RETRIED_IN_PLACE]
        found: list[Task] = await self.book.store.call(
            lambda s: s.list_tasks(states=states, limit=None)
        )
        expired = []
        for task in found:
            if task.settled_at is None or task.settled_at >= before:
                continue
            async with self.book.lock(task.id):
                task = await self.book.fresh(task.id)
                if task.state in RETRIED_IN_PLACE and await self._expire(task):
                    expired.append(task.id)
        return expired

    async def _expire(self, task: Task) -> bool:
        """Forget the task's checkout and snapshot (recorded first: a retry now takes a new
        snapshot of the user's files), then remove them; whether anything was removed."""
        if has_snapshot(task):
            task.options[EXPIRED] = task.options.pop("snapshot")
            task.worktree = None
            await self.book.save(task)
            days = (time.time() - (task.settled_at or 0)) / DAY
            await self.book.log(
                task, f"removed its checkout and snapshot, {days:.0f} days after it stopped; "
                "a retry starts from your files as they are then"
            )  # fmt: skip
        gone = task.options.get(EXPIRED)
        if not isinstance(gone, dict):
            return False
        snap = Snapshot.from_json(gone)
        folder = worktrees_dir(self.home) / task.id
        await asyncio.to_thread(in_background, remove_worktree, snap, task.id, folder)
        del task.options[EXPIRED]
        await self.book.save(task)
        return True

    async def clean(self) -> Cleaned:
        """``baton clean``: the pool and the warm indexes, then what a sweep and the
        retention remove."""
        pool = await asyncio.to_thread(clear, worktrees_dir(self.home))
        seeds = await asyncio.to_thread(clear_seeds, self.home / SEEDS)
        alone = await self.alone()
        swept = await self.sweep() if alone else Swept()
        done = await self.expire(checkouts=alone)
        done.swept, done.pool, done.not_alone = swept, pool, not alone
        done.seeds = seeds
        return done
