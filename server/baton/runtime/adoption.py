"""Adoption: a broker takes over the tasks of brokers that are gone, from their records alone.

Each owned state has one way on: a queued task is started (or waits for its prerequisites),
a task that was preparing is prepared again (:mod:`baton.runtime.prepare` reuses what was
recorded), a rate-limited one waits out its reset, one that was verifying is verified
again. For an attempt, what its wrapper wrote decides: a process still running (found by
:func:`baton.process.spawn.find_attempt` even when the dead broker never recorded its pid)
is followed; one that exited is read to its end and settled as its first broker would have;
an attempt recorded but never started is started once; a process that vanished leaves
the task ``interrupted`` (resumable) and nothing of its process group alive.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path

from baton.acp import transport as acp
from baton.config.watch import SettingsCache
from baton.core.lifecycle import Completion, TaskState
from baton.core.settle import NextTurn
from baton.core.task import Attempt, Task
from baton.process import spawn as procs
from baton.runtime.attempts import Attempts
from baton.runtime.book import KEPT, OWNED, Book
from baton.runtime.broker import Limits, TaskError, broker_alive
from baton.runtime.cleaning import Cleaner
from baton.runtime.proposals import ProposalDesk
from baton.runtime.recorded import profile_of, turn_of
from baton.runtime.turns import TurnLoop
from baton.store.paths import task_dir

log = logging.getLogger(__name__)
S = TaskState


class Adoption:
    def __init__(
        self,
        home: Path,
        book: Book,
        attempts: Attempts,
        loop: TurnLoop,
        desk: ProposalDesk,
        settings: SettingsCache,
        limits: Limits,
        defer: Callable[[Task], None],
    ) -> None:
        self.home = home
        self.book = book
        self.attempts = attempts
        self.loop = loop
        self.desk = desk
        self.settings = settings
        self.limits = limits
        self.defer = defer  # a queued task that waits for its prerequisites
        self.cleaner = Cleaner(home, book, settings)

    async def adopt(self) -> list[str]:
        """Take over the tasks of brokers that are gone. Returns the adopted task ids."""
        await self.desk.withdraw_orphans()
        states = [str(x) for x in KEPT]
        tasks: list[tuple[Task, str | None]] = await self.book.store.call(
            lambda s: s.tasks_with_owner(states=states)
        )
        adopted = []
        for task, owner in tasks:
            if owner == self.book.broker or broker_alive(owner) or task.id in self.book.tasks:
                continue
            if task.state == S.NEEDS_INPUT and not await self._acp_turn_open(task):
                continue  # a question: nothing runs, the user replies
            adopted.append(task.id)
            await self.adopt_one(task)
        return adopted

    async def owned_or_adopt(self, task_id: str) -> Task:
        """The task, adopted first when it needs a broker and its own is gone."""
        tid: str = await self.book.store.call(lambda s: s.resolve_id(task_id))
        if tid in self.book.tasks:
            return self.book.tasks[tid]
        task, owner = await self.book.store.call(lambda s: s.task_with_owner(tid))
        if task.state in OWNED and broker_alive(owner) and owner != self.book.broker:
            raise TaskError(
                f"task {tid} is {task.state} and supervised by another broker (pid "
                f"{(owner or '?').split(':')[0]}); ask that broker"
            )
        if task.state in OWNED:
            await self.adopt_one(task)
            return self.book.tasks[tid]
        return task

    async def adopt_one(self, task: Task) -> None:
        await self.book.own(task)
        await self.book.log(task, f"adopted by broker {self.book.broker}")
        try:
            self.settings.get(task.root)  # the project's own profiles: the task may use one
        except Exception as exc:
            log.info("task %s: its project's settings: %s", task.id, exc)
        if task.state == S.QUEUED:
            if task.options.get("depends_on") and not task.attempts:
                self.defer(task)
            elif task.attempts:
                self.loop.start(task, NextTurn(task.brief, "retry"))
            else:
                self.loop.start(task, NextTurn("", "first"))
            return
        if task.state == S.RATE_LIMITED:
            self.loop.hold(task)
            return
        if task.state == S.VERIFYING:
            self.loop.reverify(task)
            return
        attempts: list[Attempt] = await self.book.store.call(lambda s: s.attempts(task.id))
        main = [a for a in attempts if a.reason != "review"]
        if not main:  # the broker died while preparing: prepare again, from the record
            self.loop.start(task, NextTurn("", "first"))
            return
        await self._adopt_attempt(task, main[-1])

    async def _adopt_attempt(self, task: Task, last: Attempt) -> None:
        folder = task_dir(self.home, task.id)
        record = await asyncio.to_thread(procs.find_attempt, folder, last.n)
        exited = await asyncio.to_thread(Path(last.exit_path).exists)
        if record is None and not exited:
            if last.pid is None and not await asyncio.to_thread(procs.ever_started, folder, last.n):
                await self._start_again(task, last)
                return
            if last.pid:
                await procs.kill_tree(last.pid, self.limits.kill_grace)
            await self.book.move(
                task,
                S.INTERRUPTED,
                "the agent process vanished while no broker watched it",
                Completion.INTERRUPTED,
            )
            return
        if record is None:
            out, err, exit_path = Path(last.out_path), Path(last.err_path), Path(last.exit_path)
            record = procs.ProcessRecord(last.pid or 0, out, err, exit_path, last.started_at, 0.0)
        if last.pid is None and record.pid > 1:  # the dead broker started it, said nothing
            last.pid = record.pid
            await self.book.save_attempt(last)
            await self.book.log(task, f"found attempt {last.n}'s process (pid {record.pid})")
        if task.state == S.PREPARING:
            await self.book.move(task, S.RUNNING, "adopted")
        past = await self.book.store.call(lambda s: s.events(task.id))
        profiles = self.loop.profiles(task.root)
        await self.attempts.secrets_of(task, profiles)  # mask what it prints from now on
        profile = profile_of(task, profiles)
        transport = acp.transport_for(last.transport, profile.provider)
        if last.transport == acp.ACP:
            waiting = acp.pending_permissions(past)
            if waiting:
                self.attempts.asking[task.id] = {str(p["id"]): p for p in waiting}
        self.loop.follow(task, (last, transport, record, past))

    async def _start_again(self, task: Task, last: Attempt) -> None:
        """The attempt was recorded but its process never started: start its turn now."""
        last.ended_at, last.completion = time.time(), Completion.INTERRUPTED
        await self.book.save_attempt(last)
        await self.book.log(task, f"attempt {last.n} never started (its broker stopped); again")
        self.loop.start(task, turn_of(task) or NextTurn("", "first"))

    async def _acp_turn_open(self, task: Task) -> bool:
        """Whether the task's last attempt is an ACP turn that has not ended."""
        attempts: list[Attempt] = await self.book.store.call(lambda s: s.attempts(task.id))
        return bool(attempts) and attempts[-1].transport == acp.ACP and not attempts[-1].ended_at

    async def sweep_if_alone(self) -> None:
        """Remove what settled and orphaned tasks left on disk, and apply ``[retention]``
        (see :mod:`baton.runtime.cleaning`). Checkouts only when no other broker runs
        (another one could be creating a worktree right now); failed, cancelled and
        interrupted tasks keep theirs ``checkout_days`` for a retry in it."""
        try:
            alone = await self.cleaner.alone()
            if alone:
                swept = await self.cleaner.sweep()
                if swept.tasks:
                    log.info("removed checkouts and refs of %d settled or unknown tasks",
                             len(swept.tasks))  # fmt: skip
            await self.cleaner.expire(checkouts=alone)
        except Exception as exc:
            log.warning("could not sweep old worktrees: %s", exc)
