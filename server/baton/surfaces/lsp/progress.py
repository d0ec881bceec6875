"""One work-done progress per run of a task (create, begin, report, end).

A run starts when a task this editor delegated (or replied to, retried) starts working,
and ends when it stops: review, a question, an answer, a failure or a cancel. Reports carry
the latest step ("editing app.py", "running tool", "1200 tokens") at most every
``interval`` seconds. The progress is cancellable; a cancel from the client cancels the task.
Everything here is called on the event loop and only sends notifications (the one request,
``window/workDoneProgress/create``, is awaited in a task of its own).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from baton.core.events import Event, EventType, describe
from baton.core.lifecycle import TaskState
from baton.surfaces.lsp.server import Feature

log = logging.getLogger(__name__)
S = TaskState

#: States that end a run (the progress ends with the outcome).
ENDS = frozenset(
    {S.REVIEW, S.NEEDS_INPUT, S.ANSWERED, S.FAILED, S.CANCELLED, S.INTERRUPTED, S.APPLIED}
    | {S.REJECTED}
)
#: States in which a run is under way.
WORKING = frozenset({S.QUEUED, S.PREPARING, S.RUNNING, S.VERIFYING, S.RATE_LIMITED})


#: How much of the agent's recent text is kept to find its last sentence.
_SAID = 4000
#: The longest step shown (cut at a word, with an ellipsis).
_STEP = 80
#: How long the agent's text must pause before what it said last is shown: a sentence
#: ending the text (its dot may have been one inside a name cut by a delta), or, after a
#: longer pause, words with no end (an unpunctuated message; a stall inside a word is rare).
_QUIET = 0.6
_LONG_QUIET = 2.5
#: A sentence's end: . ! ? : ; followed by white space, or a line end.
_ENDS = re.compile(r"[.!?:;](?=\s)|\n")
_ENDS_TEXT = re.compile(r"[.!?:;]\s*$")


def last_sentence(text: str) -> str | None:
    """The last sentence of ``text`` that is complete (ends with . ! ? : ; and white space,
    or a line end), shortened at a word to fit a progress line; None while none is complete.
    A dot at the very end is not taken as an end: the next delta may go on ``app.|py``."""
    ends = [m.end() for m in _ENDS.finditer(text)]
    if not ends:
        return None
    done = text[: ends[-1]].rstrip()
    cut = [m.end() for m in _ENDS.finditer(done[:-1])] if len(done) > 1 else []
    sentence = " ".join(done[cut[-1] if cut else 0 :].split())
    if not sentence:
        return None
    if len(sentence) > _STEP:
        sentence = sentence[: _STEP - 1].rsplit(" ", 1)[0] + "…"
    return sentence


def ends_sentence(said: str, new: int) -> bool:
    """Whether the last ``new`` characters of ``said`` end a sentence (an end's white space
    may be the first of them, after a mark the text before ended with): looked for there
    only, so a stream of deltas costs its deltas, not the kept text, per event."""
    return _ENDS.search(said, max(0, len(said) - new - 1)) is not None


@dataclass
class Run:
    """The progress of one run of one task."""

    task_id: str
    token: str
    title: str
    created: bool = False
    ended: bool = False
    step: str = ""
    said: str = ""  # the agent's text since its last tool call (sentences are cut from it)
    tokens: int = 0
    diff: dict[str, Any] = field(default_factory=dict)
    pending_end: str | None = None
    last_report: float = 0.0
    reported: str = ""
    timer: asyncio.TimerHandle | None = None
    quiet: asyncio.TimerHandle | None = None  # fires when the agent's text has paused
    text_at: float = 0.0  # the loop's time of the agent's last text

    def message(self) -> str:
        if self.tokens:
            return f"{self.step} · {self.tokens} tokens" if self.step else f"{self.tokens} tokens"
        return self.step


def outcome(state: TaskState, reason: str, diff: dict[str, Any]) -> str:
    """The end message of a run."""
    match state:
        case S.REVIEW:
            files, hunks = diff.get("files", 0), diff.get("hunks", 0)
            return f"ready for review: {files} file{'s' * (files != 1)}, {hunks} hunks"
        case S.NEEDS_INPUT:
            return f"needs input: {reason}"
        case S.ANSWERED:
            return "answered"
        case S.FAILED:
            return f"failed: {reason}"
        case S.CANCELLED:
            return "cancelled"
        case S.INTERRUPTED:
            return f"interrupted: {reason}"
        case _:
            return str(state)


class Progress(Feature):
    """Tracks the tasks this editor follows and their current runs."""

    def __init__(
        self,
        server: LanguageServer,
        cancel: Callable[[str], Coroutine[Any, Any, None]],
        spawn: Callable[[Coroutine[Any, Any, Any], str], object],
        interval: Callable[[], float],
    ) -> None:
        self.server = server
        self._cancel = cancel
        self._spawn = spawn
        self._interval = interval
        self.followed: dict[str, str] = {}  # task id → title
        self.runs: dict[str, Run] = {}  # task id → current run
        self.by_token: dict[str, str] = {}  # token → task id
        self._n = 0

    @property
    def supported(self) -> bool:
        window = self.server.client_capabilities.window
        return bool(window and window.work_done_progress)

    def follow(self, task_id: str, title: str, state: TaskState) -> None:
        """Show progress for this task from now on (a run starts now if it is working)."""
        self.followed[task_id] = title
        if state in WORKING:
            self._start(task_id)

    def _start(self, task_id: str) -> Run | None:
        if not self.supported:
            return None
        current = self.runs.get(task_id)
        if current is not None and not current.ended:
            return current
        self._n += 1
        run = Run(task_id, f"baton/{task_id}/{self._n}", self.followed[task_id])
        self.runs[task_id] = run
        self.by_token[run.token] = task_id
        self._spawn(self._create(run), f"progress {run.token}")
        return run

    async def _create(self, run: Run) -> None:
        try:
            await self.server.work_done_progress.create_async(run.token)
        except Exception as exc:  # the client refused: no progress for this run
            log.info("progress %s refused: %s", run.token, exc)
            run.ended = True
            return
        run.created = True
        self.server.work_done_progress.begin(
            run.token,
            types.WorkDoneProgressBegin(
                title=f"Baton: {run.title}", cancellable=True, message=run.message() or "queued"
            ),
        )
        run.reported = run.message()  # the next step is reported at once, later ones throttled
        if run.pending_end is not None:
            self._end(run, run.pending_end)

    def on_event(self, event: Event) -> None:
        """Fold a committed event into the task's progress (cheap: called per event)."""
        task_id = event.task_id
        if task_id not in self.followed:
            return
        if event.type == EventType.STATE:
            self._on_state(
                task_id, TaskState(str(event.data.get("to"))), str(event.data.get("reason"))
            )
            return
        run = self.runs.get(task_id)
        if run is None or run.ended:
            return
        match event.type:
            case EventType.USAGE if not event.data.get("running"):  # its report follows
                run.tokens += int(event.data.get("input", 0) or 0)
                run.tokens += int(event.data.get("output", 0) or 0)
            case EventType.DIFF:
                run.diff = dict(event.data)
                return
            case EventType.TEXT:
                # Deltas cut words in half: show the last sentence the agent finished, or
                # what it said so far once it has paused (its text is then not cut).
                delta = str(event.data.get("text", ""))
                run.said = (run.said + delta)[-_SAID:]
                self._quiet_later(run)
                if not ends_sentence(run.said, len(delta)):
                    return  # no sentence finished: what is shown stays
                sentence = last_sentence(run.said)
                if sentence is None or sentence == run.step:
                    return
                run.step = sentence
            case EventType.TOOL:
                run.said = ""
                self._quiet_later(run, cancel_only=True)
                run.step = describe(event)
            case EventType.QUESTION | EventType.ERROR | EventType.PLAN | EventType.PERMISSION:
                run.step = describe(event)
            case _:
                return
        self._schedule(run)

    def _on_state(self, task_id: str, state: TaskState, reason: str) -> None:
        run = self.runs.get(task_id)
        if state in WORKING:
            if run is None or run.ended:
                run = self._start(task_id)
            if run is not None:
                run.step = {
                    S.QUEUED: "queued",
                    S.PREPARING: "taking a snapshot",
                    S.RATE_LIMITED: f"rate limited: {reason}",
                }.get(state, reason or str(state))
                self._schedule(run)
            return
        if state in ENDS and run is not None and not run.ended:
            message = outcome(state, reason, run.diff)
            if run.created:
                self._end(run, message)
            else:
                run.pending_end = message

    def _quiet_later(self, run: Run, cancel_only: bool = False) -> None:
        """Count the agent's pause from now (``cancel_only``: stop counting it). One timer
        per run, armed once: text arriving meanwhile only moves ``text_at``, and the timer,
        when it fires early, waits the rest (no timer made and cancelled per delta)."""
        if cancel_only:
            if run.quiet is not None:
                run.quiet.cancel()
                run.quiet = None
            return
        loop = asyncio.get_running_loop()
        run.text_at = loop.time()
        if run.quiet is None:
            run.quiet = loop.call_at(run.text_at + _QUIET, self._quiet, run, False, run.text_at)

    def _quiet(self, run: Run, long: bool, since: float) -> None:
        """The pause timer fired: the agent has been quiet for ``_QUIET`` (or, ``long``,
        ``_LONG_QUIET``) seconds since its last text, or, text having come since ``since``,
        it waits again from that text (a short pause first)."""
        run.quiet = None
        if run.text_at > since:
            long = False
        due = run.text_at + (_LONG_QUIET if long else _QUIET)
        loop = asyncio.get_running_loop()
        if due > loop.time():
            run.quiet = loop.call_at(due, self._quiet, run, long, run.text_at)
            return
        self._paused(run, long)

    def _paused(self, run: Run, long: bool) -> None:
        """No text for a while: what the agent said since its last sentence is whole when it
        ends a sentence, or after a long pause."""
        run.quiet = None
        ends = [m.end() for m in _ENDS.finditer(run.said)]
        rest = " ".join(run.said[ends[-1] if ends else 0 :].split())
        if run.ended or not rest:
            return
        if not long and not _ENDS_TEXT.search(rest):
            due = run.text_at + _LONG_QUIET
            run.quiet = asyncio.get_running_loop().call_at(due, self._quiet, run, True, run.text_at)
            return
        if len(rest) > _STEP:
            rest = "…" + rest[-(_STEP - 1) :].split(" ", 1)[-1]
        run.step = rest
        self._schedule(run)

    def _schedule(self, run: Run) -> None:
        if not run.created or run.ended or run.timer is not None:
            return
        wait = run.last_report + self._interval() - time.monotonic()
        if wait <= 0:
            self._report(run)
        else:
            run.timer = asyncio.get_running_loop().call_later(wait, self._report, run)

    def _report(self, run: Run) -> None:
        run.timer = None
        if run.ended:
            return
        message = run.message()
        if message == run.reported:
            return
        run.reported, run.last_report = message, time.monotonic()
        self.server.work_done_progress.report(
            run.token, types.WorkDoneProgressReport(message=message, cancellable=True)
        )

    def _end(self, run: Run, message: str) -> None:
        if run.timer is not None:
            run.timer.cancel()
            run.timer = None
        run.ended = True
        if run.quiet is not None:
            run.quiet.cancel()
            run.quiet = None
        self.server.work_done_progress.end(run.token, types.WorkDoneProgressEnd(message=message))
        self.by_token.pop(run.token, None)
        self.server.work_done_progress.tokens.pop(run.token, None)

    def cancelled(self, token: str | int) -> None:
        """The client pressed cancel on a progress: cancel its task."""
        task_id = self.by_token.get(str(token))
        if task_id is not None:
            self._spawn(self._cancel(task_id), f"cancel {task_id}")

    async def stop(self) -> None:
        self.close()

    def close(self) -> None:
        for run in self.runs.values():
            if run.timer is not None:
                run.timer.cancel()
            if run.quiet is not None:
                run.quiet.cancel()
