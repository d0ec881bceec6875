"""Verifying a change before review: the project's checks, then an independent review.

A failing check, or a reviewer asking for changes, gives the worker a repair turn in the
same session (``repair_rounds`` of them, within the task's attempt budget); otherwise the
task reaches review with what was checked recorded as evidence. A check's output is masked
(the task's secret values) before it goes anywhere: its event, the evidence, a repair turn.

A check runs the agent's code, so it runs in the agent's sandbox
(:func:`baton.runtime.checks.run_sandboxed`): the same ``sandbox`` setting, the worker's
``network``, the other accounts' state folders hidden; its event says how it ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from baton.config.profiles import Profile
from baton.core.diff import FileDiff
from baton.core.events import EventType
from baton.core.lifecycle import Completion, TaskState
from baton.core.masking import mask_text
from baton.core.review import REQUEST_CHANGES, Verdict, parse_verdict, review_brief
from baton.core.review import repair_brief as review_repair_brief
from baton.core.settle import DEFAULT_MAX_ATTEMPTS, NextTurn, Settle, out_of_attempts
from baton.core.task import Task
from baton.runtime.attempts import Attempts, StartFailed
from baton.runtime.book import Book
from baton.runtime.checks import CheckResult, repair_prompt, run_sandboxed
from baton.runtime.checks import summary as checks_summary
from baton.runtime.drafts import Drafts
from baton.runtime.recorded import agent_cwd, checks_of, reviewer_of, snapshot_of
from baton.store.paths import task_dir, worktrees_dir
from baton.workspace import Snapshot, create_worktree, remove_worktree, run_git
from baton.workspace.git import in_background

S = TaskState


class Verifier:
    def __init__(
        self,
        home: Path,
        book: Book,
        attempts: Attempts,
        drafts: Drafts,
        profile: Callable[[str, str], Profile],
        secrets: Callable[[Task], Awaitable[list[str]]] | None = None,
    ) -> None:
        self.home = home
        self.book = book
        self.attempts = attempts
        self.drafts = drafts
        self.profile = profile  # (worker, root) → its profile
        self.secrets = secrets  # the values to mask in the task's check output

    async def verify(self, task: Task, reasons: Sequence[str]) -> Settle | NextTurn:
        """Check the task's change; a repair turn, or where the task settles (review)."""
        checks, reviewer = checks_of(task), reviewer_of(task)
        if task.state != S.VERIFYING:
            await self.book.move(task, S.VERIFYING, "verifying the change")
        results = []
        sandbox = self._sandbox(task) if checks else {}
        for check in checks:
            if self._cancelled(task):
                return _cancelled()
            result = await asyncio.to_thread(
                run_sandboxed, check, agent_cwd(task), task_dir(self.home, task.id), **sandbox
            )
            if self.secrets is not None and (values := await self.secrets(task)):
                result = dataclasses.replace(result, output=mask_text(result.output, values))
            results.append(result)
            await self.book.emit(
                task,
                EventType.VERIFY,
                {"name": result.name, "command": list(result.argv), "exit": result.exit_code,
                 "seconds": round(result.seconds, 3), "passed": result.passed,
                 "output": result.output[-1000:], "sandbox": result.sandbox},
            )  # fmt: skip
        files, _ = await self.drafts.load(task.id)
        notes = [checks_summary(results)] if checks else []
        rounds = int(task.options.get("repair_rounds", 2))
        done = int(task.options.get("repair_round", 0))
        cap = int(task.options.get("max_attempts", DEFAULT_MAX_ATTEMPTS))
        repair: str | None = None
        if not all(r.passed for r in results):
            repair = repair_prompt(results, done + 1, rounds)
        elif reviewer == task.worker:
            notes.append(f"review skipped: {reviewer} wrote the change")
        elif reviewer:
            if self._cancelled(task):
                return _cancelled()
            verdict = await self._review(task, reviewer, files)
            if verdict is None:
                return _cancelled()
            task.options["review_result"] = {"worker": reviewer, **verdict.to_json()}
            await self.book.emit(task, EventType.REVIEW, task.options["review_result"])
            notes.append(f"review by {reviewer}: {verdict.verdict.replace('_', ' ')}")
            if verdict.verdict == REQUEST_CHANGES and verdict.readable:
                repair = review_repair_brief(verdict)
        record_evidence(task, results, files)
        message = "; ".join(notes) or "ready for review"
        if repair is not None and out_of_attempts(reasons, cap):
            message += f"; no repair: the task's {cap} attempts are used up"
        elif repair is not None and done < rounds and task.session_id:
            task.options["repair_round"] = done + 1
            await self.book.move(task, S.RUNNING, f"{message}; repair round {done + 1} of {rounds}")
            return NextTurn(repair, "repair")
        return Settle(S.REVIEW, Completion.COMPLETED, message)

    def _sandbox(self, task: Task) -> dict[str, Any]:
        """How the task's checks are confined: under the ``sandbox`` setting its worker's
        turns run under, with the worker's ``network``, every account's state hidden."""
        try:
            network = self.profile(task.worker, task.root).network != "none"
        except Exception:  # a worker since removed from the config: the network is allowed
            network = True
        found = self.attempts.sandbox_of(task, None)
        return {
            "mode": found.get("sandbox", "auto"),
            "hide": found.get("hide", ()),
            "network": network,
        }

    def _cancelled(self, task: Task) -> bool:
        if task.id not in self.book.cancelling:
            return False
        self.book.cancelling.discard(task.id)
        return True

    async def _review(self, task: Task, reviewer: str, files: Sequence[FileDiff]) -> Verdict | None:
        """A different worker reviews the change in a checkout of its own; None if cancelled."""
        profile = self.profile(reviewer, task.root)
        snap = snapshot_of(task)
        review_id = f"{task.id}-review"
        result = await asyncio.to_thread(in_background, _result_snapshot, snap, task.id)
        path = await asyncio.to_thread(
            in_background, create_worktree, result, review_id, worktrees_dir(self.home)
        )
        try:
            turn = NextTurn(review_brief(task.instruction, files), "review")
            try:
                attempt, transport, record = await self.attempts.start(
                    task, profile, turn, side=True, cwd=str(path / snap.prefix), model=profile.model
                )
            except StartFailed as exc:
                return Verdict(
                    REQUEST_CHANGES, summary=f"the reviewer could not start: {exc}", readable=False
                )
            live = await self.attempts.follow(task, attempt, transport, record, side=True)
            attempt.completion = live.stop.completion if live.stop else live.outcome.completion
            attempt.session_id = live.outcome.session_id
            await self.book.save_attempt(attempt)
            if live.stop is not None and live.stop.completion == Completion.CANCELLED:
                return None
            if live.stop is not None or live.outcome.error is not None:
                why = live.stop.message if live.stop else live.outcome.error_message
                return Verdict(REQUEST_CHANGES, summary=f"the review failed: {why}", readable=False)
            return parse_verdict(live.outcome.answer)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(in_background, remove_worktree, result, review_id, path)


def record_evidence(task: Task, results: Sequence[CheckResult], files: Sequence[FileDiff]) -> None:
    """What was checked, what was not, and what the worker produced."""
    task.options["evidence"] = {
        "checks": [r.to_json() for r in results],
        "unchecked": [] if results else ["no checks configured for this task"],
        "files": [f.path for f in files],
        "branch": task.branch,
        "repair_rounds": int(task.options.get("repair_round", 0)),
    }


def _cancelled() -> Settle:
    return Settle(S.CANCELLED, Completion.CANCELLED, "cancelled by the user")


def _result_snapshot(snap: Snapshot, task_id: str) -> Snapshot:
    """The worker's result (the commit compute_diff last recorded) as a snapshot to check out."""
    commit = str(run_git(["rev-parse", snap.result_ref], snap.git_dir, git_dir=snap.git_dir))
    return dataclasses.replace(snap, commit=commit.strip(), task_id=f"{task_id}-review")
