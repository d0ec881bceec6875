"""Steering: what the user asks of a task's work after delegating it.

Cancel, steer, reply, retry, hand off, complete (the user says the work is done), redo a
hunk, and answer an agent's permission request. Each checks the task's state under its
lock, then either stops the live attempt with a :class:`~baton.core.settle.Stop` that says
what comes next (a steer is a stop whose next turn carries the user's text) or starts the
turn loop with a :class:`~baton.core.settle.NextTurn`. None of them runs an agent itself:
the turn loop (:mod:`baton.runtime.turns`) does. A task whose broker is gone is adopted
first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from baton.acp import transport as acp
from baton.core import budget
from baton.core.budget import Caps
from baton.core.events import Event
from baton.core.lifecycle import Completion, TaskState
from baton.core.settle import NextTurn, Stop
from baton.core.task import Task
from baton.runtime.attempts import Attempts
from baton.runtime.book import Book
from baton.runtime.broker import TaskError
from baton.runtime.budgets import BudgetWatch
from baton.runtime.drafts import Drafts
from baton.runtime.recorded import has_snapshot, not_a_proposal
from baton.runtime.redo import redo_turn
from baton.runtime.turns import TurnLoop
from baton.runtime.verify import record_evidence
from baton.store.paths import task_dir

S = TaskState
#: The states a user may retry from, and hand to another worker from.
RETRYABLE = (S.FAILED, S.CANCELLED, S.INTERRUPTED, S.ANSWERED)
HANDABLE = (S.FAILED, S.CANCELLED, S.INTERRUPTED, S.RATE_LIMITED)
#: The states a user may say the work is done from, when the checkout holds changes.
COMPLETABLE = (S.FAILED, S.CANCELLED, S.INTERRUPTED)
#: The turn that continues a session a budget stopped.
CONTINUE = (
    "Baton stopped you here because the task reached its budget; it has been raised. "
    "Continue the task where you stopped."
)


class Steering:
    def __init__(
        self,
        home: Path,
        book: Book,
        attempts: Attempts,
        loop: TurnLoop,
        drafts: Drafts,
        owned_or_adopt: Callable[[str], Awaitable[Task]],
    ) -> None:
        self.home = home
        self.book = book
        self.attempts = attempts
        self.loop = loop
        self.drafts = drafts
        self.owned_or_adopt = owned_or_adopt  # the task, adopted first if its broker is gone
        self.budgets: BudgetWatch | None = None

    async def cancel(self, task_id: str) -> Task:
        task = await self.owned_or_adopt(task_id)
        async with self.book.lock(task.id):
            live = self.attempts.live.get(task.id)
            if live is not None and not live.side:
                await self.attempts.stop(live, Stop(Completion.CANCELLED, "cancelled by the user"))
                return task
            if task.state in (S.QUEUED, S.NEEDS_INPUT, S.RATE_LIMITED, S.INTERRUPTED):
                self.loop.cancel_timer(task.id)
                await self.book.move(
                    task, S.CANCELLED, "cancelled by the user", Completion.CANCELLED
                )
                return task
            if task.state in (S.PREPARING, S.RUNNING, S.VERIFYING):
                # Between steps (snapshot, starting the agent, checks): the work stops at
                # its next step, which moves the task to cancelled.
                self.book.cancelling.add(task.id)
                if live is not None:  # the reviewer is at work: stop it too
                    await self.attempts.stop(live, Stop(Completion.CANCELLED, "cancelled"))
                return task
            raise TaskError(f"task {task.id} is {task.state}: nothing to cancel")

    async def reply(
        self, task_id: str, text: str, *, options: Mapping[str, Any] | None = None
    ) -> Task:
        """Answer a question (needs_input) or ask for changes (review): resumes the session.

        ``options`` are recorded on the task with the move (a revision's review record)."""
        task = await self.owned_or_adopt(task_id)
        not_a_proposal(task, "reply")
        async with self.book.lock(task.id):
            if task.state not in (S.NEEDS_INPUT, S.REVIEW):
                raise TaskError(
                    f"task {task.id} is {task.state}; reply is for needs_input or review"
                    + ("; use steer while it runs" if task.state == S.RUNNING else "")
                )
            if task.id in self.attempts.live:
                raise TaskError(
                    f"task {task.id} asks permission; answer it (baton answer), or cancel"
                )
            if task.worktree and not await asyncio.to_thread(Path(task.worktree).is_dir):
                raise TaskError(  # reviewed again after an undo: its checkout was removed
                    f"task {task.id}'s checkout was removed when it was applied; accept or "
                    "reject its hunks, or delegate the change again"
                )
            before = dict(task.options)
            task.options.update(options or {})
            try:
                await self._raise_caps(task, None)  # a cap still reached refuses the turn
            except TaskError:
                task.options.clear()
                task.options.update(before)
                raise
            await self.book.move(task, S.RUNNING, "reply")
            self.loop.start(task, NextTurn(text, "reply"))
            return task

    async def steer(self, task_id: str, text: str) -> Task:
        """Interrupt the running attempt and continue the same session with new guidance."""
        task = await self.owned_or_adopt(task_id)
        async with self.book.lock(task.id):
            live = self.attempts.live.get(task.id)
            if task.state != S.RUNNING or live is None:
                raise TaskError(
                    f"task {task.id} is {task.state}; steer is for running tasks"
                    + ("; use reply" if task.state in (S.NEEDS_INPUT, S.REVIEW) else "")
                )
            await self.attempts.stop(live, Stop(Completion.CANCELLED, f"steer: {text}", text))
        return task

    async def retry(self, task_id: str, caps: Caps | None = None) -> Task:
        """Start a settled task again (in its checkout when it has one). ``caps`` raise the
        task's own caps first; a task a budget stopped continues its session where it
        stopped (from review too: its work so far stays, as after a reply)."""
        task = await self.owned_or_adopt(task_id)
        not_a_proposal(task, "retry")
        if task.state == S.REVIEW and task.completion == Completion.BUDGET:
            await self._raise_caps(task, caps)  # reply records the task's options with its move
            raised = {budget.OPTION: task.options[budget.OPTION]} if caps else {}
            text = CONTINUE if task.session_id else f"{task.brief}\n\n{CONTINUE}"
            return await self.reply(task.id, text, options=raised)
        async with self.book.lock(task.id):
            if task.state not in RETRYABLE:
                raise TaskError(f"task {task.id} is {task.state}; retry is for settled tasks")
            await self._raise_caps(task, caps)
            stopped = task.completion == Completion.BUDGET and task.session_id
            await self.book.move(task, S.QUEUED, "retry")
            task.completion, task.message = None, ""
            turn = "retry" if task.worktree else "first"
            self.loop.start(task, NextTurn(CONTINUE if stopped else task.brief, turn))
            return task

    async def _raise_caps(self, task: Task, caps: Caps | None) -> None:
        """Put ``caps`` on the task; refused while a cap or daily budget is still reached."""
        before = dict(task.options)
        if caps is not None and not caps.empty:
            budget.raise_caps(task.options, caps)
        found = await self.budgets.check(task) if self.budgets is not None else None
        if found is None:
            return
        task.options.clear()
        task.options.update(before)
        if found.scope == budget.TASK:
            flag = {"tokens": "--max-tokens", "cost": "--max-cost", "steps": "--max-steps"}
            raise TaskError(
                f"task {task.id}: {found.message}; raise it: baton retry {task.id} "
                f"{flag.get(found.measure, '--max-seconds')} N"
            )
        raise TaskError(
            f"task {task.id}: {found.message} on {found.day}; raise the daily budget in the "
            "config or wait until tomorrow"
        )

    async def handoff(self, task_id: str, worker: str | None = None) -> Task:
        """Hand a failed, cancelled, interrupted or rate-limited task to another worker.

        The task keeps its id, worktree, events and attempts; the new worker starts a fresh
        session with the brief. Without ``worker``, the project's routing picks the next one.
        """
        task = await self.owned_or_adopt(task_id)
        not_a_proposal(task, "handoff")
        async with self.book.lock(task.id):
            if task.state not in HANDABLE:
                raise TaskError(
                    f"task {task.id} is {task.state}; handoff is for failed, cancelled, "
                    "interrupted or rate-limited tasks"
                )
            if not await self.loop.hand_off(task, "handed off by the user", worker, False):
                raise TaskError(f"no other worker may take task {task.id}")
            return task

    async def complete(self, task_id: str, evidence: str) -> Task:
        """The user says the work landed though the worker never said so: a failed,
        cancelled or interrupted task whose checkout holds changes goes to review, with the
        final diff and the user's ``evidence`` recorded (in the task's evidence, its
        message and its events). Refused when the checkout holds nothing to review."""
        task = await self.owned_or_adopt(task_id)
        not_a_proposal(task, "complete")
        async with self.book.lock(task.id):
            if task.state not in COMPLETABLE:
                raise TaskError(
                    f"task {task.id} is {task.state}; complete is for failed, cancelled or "
                    "interrupted tasks"
                )
            if task.id in self.attempts.live:
                raise TaskError(f"task {task.id}'s agent still runs; cancel it first")
            if not has_snapshot(task) or not task.worktree:
                raise TaskError(f"task {task.id} never got a checkout: nothing to review")
            files = await self.drafts.final_if_changed(task)
            if not files:
                raise TaskError(
                    f"task {task.id}'s checkout holds no changes: nothing to review "
                    "(retry or handoff it instead)"
                )
            record_evidence(task, [], files)
            task.options["evidence"].update(
                unchecked=["completion asserted by the user; no checks were run"],
                asserted=evidence,
            )
            await self.book.log(task, f"completed by the user; evidence: {evidence}")
            await self.book.move(
                task, S.REVIEW, f"completed by the user: {evidence}", Completion.COMPLETED
            )
            return task

    async def redo(self, task_id: str, hunk_id: str, current: str | None = None) -> Task:
        """Ask the agent to redo a hunk against the user's text of its file (``current``:
        an open buffer's; else the file on disk): a reply turn (see :mod:`baton.runtime.redo`)."""
        task = await self.owned_or_adopt(task_id)
        if task.state != S.REVIEW:
            raise TaskError(f"task {task.id} is {task.state}; redo is for tasks in review")
        files, _ = await self.drafts.load(task.id)
        prompt = await redo_turn(task, files, hunk_id, current)
        await self.book.save(task)
        return await self.reply(task.id, prompt)

    async def answer(
        self, task: Task, events: list[Event], option: str, permission_id: str | None
    ) -> dict[str, Any]:
        """Answer the ACP permission request waiting in ``events`` (the task's): ``option``
        is an option id, a kind (``allow_once``…) or a word (``allow``, ``always``,
        ``reject``). The answer goes straight to the task's session runner, so any broker
        may answer."""
        if not acp.pending_permissions(events):
            raise TaskError(f"task {task.id} is {task.state}; no permission request is waiting")
        try:
            answered = await acp.answer(task_dir(self.home, task.id), permission_id, option)
        except acp.ControlError as exc:
            raise TaskError(f"task {task.id}: {exc}") from None
        return {"taskId": task.id, "permission": answered.get("id"), "option": answered["option"]}
