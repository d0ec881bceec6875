"""One attempt: record it, start its process, follow it to its end.

An attempt is recorded BEFORE its process starts (``pid`` unset, the turn's prompt kept on
the task), so a broker that dies in between leaves a record the next one can act on: the
process is found from what its wrapper wrote (:func:`baton.process.spawn.find_attempt`)
and followed, or it never started and the turn starts again — never twice. Following
tails the output file from the stored offset; after a restart the lines before it are fed
to a fresh parser first (their events are stored already), so an attempt settles the same
way whichever broker reads its end. The parser's events go through the attempt's masker
(:class:`~baton.core.events.EventMasker`, the values from the task's profile on whichever
broker follows it); the replayed lines go through it too, so a secret whose beginning the
last broker held back is masked whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import baton.runtime.remote as remote
from baton.acp import transport as acp
from baton.agents.base import AgentNotFound, StderrReader, Turn
from baton.agents.state import CONFIG_VARIABLES, state_paths
from baton.config.profiles import Profile
from baton.config.secrets import SecretError, redact, resolve_env, use_backend, with_mask_names
from baton.config.watch import SettingsCache
from baton.core.events import Event, EventMasker, EventType
from baton.core.lifecycle import Completion, TaskState
from baton.core.outcome import Outcome
from baton.core.settle import NextTurn, Stop
from baton.core.task import Attempt, Task
from baton.errors import BatonError
from baton.faults import crash_point
from baton.process import spawn as procs
from baton.process.exitwatch import ExitWatch
from baton.process.tail import Tailer, lines_before
from baton.process.transport import Transport
from baton.runtime.book import Book
from baton.runtime.broker import Limits, TaskError
from baton.runtime.live import Live as Live  # re-exported: where it was defined before
from baton.runtime.live import Watcher
from baton.runtime.recorded import agent_cwd, profile_of, store_turn
from baton.store.paths import task_dir

log = logging.getLogger(__name__)
S, C = TaskState, Completion
#: Lines of an agent's output parsed and emitted together at most (a backlog after a pause).
PUMP_BATCH = 128
#: The watch's sleep (s) at most while a pidfd wakes it at the agent's end.
WATCHED_POLL = 0.5
#: Completions that mean Baton stopped the attempt itself.
_STOPS = frozenset({C.CANCELLED, C.STALLED, C.TIMEOUT, C.INTERRUPTED, C.BUDGET})


def _worker_error(event: Event) -> bool:
    """The parser's verdict that the agent ended without finishing (its exit code, no end
    marker): dropped when Baton itself ended the attempt, whose stop says what happened."""
    return event.type == EventType.ERROR and event.data.get("kind") == Completion.WORKER_ERROR


class StartFailed(BatonError):
    """The attempt could not start; ``completion`` says how the task ends."""

    def __init__(self, completion: Completion, message: str) -> None:
        super().__init__(message)
        self.completion = completion


class Attempts:
    def __init__(
        self,
        home: Path,
        book: Book,
        settings: SettingsCache,
        limits: Limits,
        on_files: Callable[[Task], None],
    ) -> None:
        self.home = home
        self.book = book
        self.settings = settings
        self.limits = limits
        self.on_files = on_files  # the agent says it touched files (a draft diff is due)
        self.live: dict[str, Live] = {}
        # ACP permission requests waiting for the user: task id → permission id → request.
        self.asking: dict[str, dict[str, dict[str, Any]]] = {}
        self.closed = False
        self._launching = 0
        self._no_launch = asyncio.Event()
        self._no_launch.set()
        self._background: set[asyncio.Task[Any]] = set()
        self.watcher: Watcher | None = None

    # ------------------------------------------------------------------ starting

    def transport_for(self, task: Task, profile: Profile) -> Transport:
        """The task's transport: chosen for a new session, then kept for its whole life."""
        chosen = task.options.get("transport") if task.session_id else None
        if chosen not in (acp.ACP, acp.NATIVE):
            chosen, why = acp.choose(profile, self.home)
            task.options["transport"], task.options["transport_reason"] = chosen, why
        return acp.transport_for(str(chosen), profile.provider)

    async def start(
        self,
        task: Task,
        profile: Profile,
        turn: NextTurn,
        *,
        side: bool = False,
        cwd: str | None = None,
        model: str | None = None,
    ) -> tuple[Attempt, Transport, procs.ProcessRecord]:
        """Record the attempt, then start its process; raises :class:`StartFailed`.

        A side attempt (the independent review) runs in ``cwd`` with its own session.
        """
        if self.closed:
            raise StartFailed(Completion.INTERRUPTED, "the broker is stopping")
        try:
            transport = (
                acp.transport_for(acp.NATIVE, profile.provider)
                if side
                else remote.place(task, self.transport_for(task, profile), profile, self.home)
            )
        except (ValueError, KeyError) as exc:
            raise StartFailed(Completion.WORKER_ERROR, str(exc)) from None
        try:
            profile = await self._with_secrets(task, profile)
        except SecretError as exc:
            raise StartFailed(Completion.AUTH, str(exc)) from None
        folder = task_dir(self.home, task.id)
        n = task.attempts + 1
        out, err, exit_path = procs.attempt_paths(folder, n)
        attempt = Attempt(
            task_id=task.id,
            n=n,
            reason=turn.reason,
            worker=profile.name,
            provider=profile.provider,
            model=model if side else task.model,
            transport=transport.name,
            session_id=None if side else task.session_id,
            out_path=str(out),
            err_path=str(err),
            exit_path=str(exit_path),
            started_at=time.time(),
            owner=self.book.broker,
        )
        agent_turn = Turn(
            task_id=task.id,
            prompt=turn.prompt,
            cwd=cwd or agent_cwd(task),
            reason=turn.reason,
            session_id=None if side or turn.reason in ("first", "handoff") else task.session_id,
            model=attempt.model,
            files=() if side else tuple(t.path for t in task.targets),
            scope=() if side else tuple(task.scope),
            task_dir=str(folder),
            effort=None if side else task.options.get("effort"),
            read_only=bool(task.options.get("read_only")),
            **self.sandbox_of(task, profile),
        )
        # From the record to the pid nothing may interrupt us: a broker closing in between
        # would leave an agent whose attempt says it never started.
        self._launching += 1
        self._no_launch.clear()
        try:
            task.attempts = n
            if not side:
                store_turn(task, turn)
            await self.book.record_attempt(task, attempt)
            crash_point("after_attempt_intent")
            try:
                started = await transport.start(agent_turn, profile, n)
            except (AgentNotFound, OSError, KeyError, ValueError) as exc:
                attempt.ended_at, attempt.completion = time.time(), Completion.WORKER_ERROR
                await self.book.save_attempt(attempt)
                raise StartFailed(Completion.WORKER_ERROR, str(exc)) from None
            crash_point("after_spawn")
            attempt.pid, attempt.started_at = started.record.pid, started.record.started_at
            await self.book.save_attempt(attempt)
        finally:
            self._launching -= 1
            if not self._launching:
                self._no_launch.set()
        if started.how:
            await self.book.log(task, f"{transport.name} turn {n}: {started.how}")
        for warning in started.warnings:  # worker_mcp and MCP servers' files: said loudly
            await self.book.log(task, f"{transport.name} turn {n}: {warning}", level="warning")
        return attempt, transport, started.record

    def sandbox_of(self, task: Task, profile: Profile | None) -> dict[str, Any]:
        """The sandbox of ``profile``'s turns: the user's ``sandbox`` setting, and the state
        folders of the other configured accounts (hidden from this one) — of every account
        for ``None`` (the task's checks, which are no agent); empty when the task's settings
        never loaded (the defaults apply)."""
        settings = self.settings.last_good(task.root)
        if settings is None:
            return {}
        hide: list[str] = []
        for other in settings.profiles.values():
            variable = CONFIG_VARIABLES.get(other.provider)
            mine = profile is not None and other.name == profile.name
            if not mine and other.config_dir and variable:
                moved = {**os.environ, variable: os.path.expanduser(other.config_dir)}
                hide += state_paths(other.provider, moved)
        return {"sandbox": settings.sandbox, "hide": tuple(hide)}

    async def _with_secrets(self, task: Task, profile: Profile) -> Profile:
        """``profile`` with its keyring references resolved, for this launch only.

        The values go to the agent's environment and nowhere else (its wrapper is told the
        names of the variables that hold them, to mask its output files); the events are
        masked before they are stored (see :meth:`follow`).
        """
        settings = self.settings.last_good(task.root)
        use_backend(settings.secrets_backend if settings else None)
        env, secrets = await asyncio.to_thread(resolve_env, profile.env, profile.name)
        known = self.book.secrets.setdefault(task.id, [])
        known.extend(s for s in secrets if s not in known)
        return dataclasses.replace(profile, env=with_mask_names(env, secrets))

    async def secrets_of(self, task: Task, profiles: Mapping[str, Profile]) -> list[str]:
        """The values to mask in what ``task``'s agents print and write: those its agents were
        given here, else derived from its recorded profile (``profiles``: the workers its
        root names, for a task that recorded none) — any broker may ask, an adopting one too."""
        if task.id not in self.book.secrets:
            with contextlib.suppress(Exception):  # its settings choose the keyring backend
                self.settings.get(task.root)
            try:
                profile = profile_of(task, profiles)
            except TaskError:
                return []
            await self.learn_secrets(task, profile)
        return self.book.secrets.get(task.id, [])

    async def learn_secrets(self, task: Task, profile: Profile) -> None:
        """Know the values to mask in ``task``'s events without launching anything: for an
        attempt another broker started (a value missing from the keyring is skipped)."""
        if task.id in self.book.secrets:
            return
        try:
            await self._with_secrets(task, profile)
        except SecretError as exc:
            log.warning("task %s: %s", task.id, exc)

    async def launches_done(self, within: float) -> None:
        """Wait (up to ``within`` s) until no attempt is between its record and its pid."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._no_launch.wait(), within)

    # ------------------------------------------------------------------ following

    async def follow(
        self,
        task: Task,
        attempt: Attempt,
        transport: Transport,
        record: procs.ProcessRecord,
        *,
        side: bool = False,
        past: Sequence[Event] = (),
    ) -> Live:
        """Tail the attempt's output and watch it until its process ends.

        ``past``: the attempt's stored events when another broker followed it before.
        """
        now = time.monotonic()
        mine = [e for e in past if e.attempt == attempt.n]
        judged = any(e.data.get("at_exit") for e in mine)  # its end's events are stored
        tailer = Tailer(Path(attempt.out_path), attempt.out_offset)
        live = Live(
            task, attempt, transport, record, tailer, Outcome.fold(mine), transport.parser(),
            now, now, side, masking=EventMasker(self.book.secrets.get(task.id, ())),
        )  # fmt: skip
        self.live[task.id] = live
        if attempt.ended_at is not None and attempt.completion in _STOPS:
            # Baton had stopped it: say so again (the reason's words are not kept).
            assert attempt.completion is not None
            live.stop = Stop(attempt.completion, f"the attempt was stopped: {attempt.completion}")
        if attempt.out_offset:
            for line in await asyncio.to_thread(
                lines_before, Path(attempt.out_path), attempt.out_offset
            ):
                live.masking.events(live.parser.feed(line))  # their events are stored already
        if not side and task.id in self.book.cancelling:  # cancelled while it was starting
            self.book.cancelling.discard(task.id)
            self._spawn(self.stop(live, Stop(Completion.CANCELLED, "cancelled by the user")))
        if self.watcher is not None and not side:
            self.watcher.following(live, mine)
        pump = asyncio.get_running_loop().create_task(self._pump(live))
        err_pump = asyncio.get_running_loop().create_task(self._pump_stderr(live, bool(mine)))
        try:
            exit_code = await self._watch(live, pump)
            live.stop = live.stop or remote.runner_stop(attempt)  # a remote node lost
            crash_point("after_exit")
            tailer.finish()  # drain what is left, then let the parser judge the end
            with contextlib.suppress(Exception):
                await pump
            live.confirm()
            err = procs.stderr_tail(Path(attempt.err_path))
            ending = live.masking.events(live.parser.finish(exit_code, err))
            if live.stop is not None:  # Baton ended it: "no end marker" is not the agent's error
                ending = [e for e in ending if not _worker_error(e)]
            ending += live.masking.flush()  # what it held back, in the same batch
            if not judged:  # marked, so a broker that reads this end again adds nothing
                ending = [dataclasses.replace(e, data={**e.data, "at_exit": True}) for e in ending]
                await self._emit(live, ending)
            live.confirm()  # every batch before the ending's is committed (or failed) now
            attempt.exit_code, attempt.ended_at = exit_code, time.time()
            attempt.out_offset = tailer.offset
        finally:
            pump.cancel()
            err_pump.cancel()
            if self.live.get(task.id) is live:
                del self.live[task.id]
            if not side:
                self.asking.pop(task.id, None)
                if self.watcher is not None:
                    self.watcher.ended(live)
        if transport.name != acp.ACP and attempt.exit_code is None:
            # No exit record: the wrapper itself was killed, so it could not end what the
            # agent started (it does before writing the record): that is done here.
            await procs.kill_tree(record.pid, self.limits.kill_grace, record.create_time)
        return live

    async def stop(self, live: Live, why: Stop) -> None:
        """Stop the running turn (ACP keeps its session when it can)."""
        if live.stop is None:
            live.stop = why
        folder = task_dir(self.home, live.task.id)
        await live.transport.interrupt(folder, live.record, self.limits.kill_grace)

    async def _watch(self, live: Live, pump: asyncio.Task[None]) -> int | None:
        """Wait for the process to end, enforcing the idle and wall-clock limits."""
        attempt, record = live.attempt, live.record
        exit_path = Path(attempt.exit_path)
        last_alive_check = 0.0
        ended = ExitWatch(record.pid, record.create_time)  # wakes the poll below at the end
        pump.add_done_callback(lambda _: ended.close())  # follow cancels the pump when done
        while True:
            live.confirm()
            rec = procs.read_exit(exit_path) if exit_path.exists() else None
            if rec is not None:
                return rec.code
            now = time.monotonic()
            if pump.done() and not self.closed:
                # The output file went away (task folder deleted) or the parser broke.
                exc = pump.exception() if not pump.cancelled() else None
                if live.stop is None:
                    live.stop = Stop(Completion.WORKER_ERROR, f"lost the agent's output: {exc}")
                await procs.kill_tree(record.pid, self.limits.kill_grace, record.create_time)
                return None
            if now - last_alive_check > 1.0:
                last_alive_check = now
                if not procs.is_alive(record.pid, record.create_time):
                    await asyncio.sleep(0.1)  # the exit record may be in flight
                    rec = procs.read_exit(exit_path) if exit_path.exists() else None
                    if rec is None and live.stop is None:
                        live.stop = Stop(
                            Completion.INTERRUPTED,
                            "the agent's process ended without an exit record (killed?)",
                        )
                    return rec.code if rec is not None else None
            if self.asking.get(live.task.id):
                # Waiting for the user's answer: neither a stall nor the agent's time.
                live.started += now - live.last_output
                live.last_output = now
            if live.stop is None:
                why = None
                if now - live.last_output > self.limits.stall_after:
                    why = Stop(
                        Completion.STALLED,
                        f"no output for {self.limits.stall_after:.0f} s; the agent was stopped",
                    )
                elif now - live.started > self.limits.wall_clock:
                    why = Stop(
                        Completion.TIMEOUT, f"ran longer than {self.limits.wall_clock:.0f} s"
                    )
                if why is not None:
                    live.stop = why
                    await procs.kill_tree(record.pid, self.limits.kill_grace, record.create_time)
            await ended.wait(self._watch_interval(live, ended))

    def _watch_interval(self, live: Live, ended: ExitWatch) -> float:
        """How long the watch sleeps between two looks: the poll while only a look finds
        the end. A native attempt's wrapper exits once its exit record is written, so with
        a pidfd the end wakes the watch and it looks only for the limits (a tenth of the
        shortest, at most :data:`WATCHED_POLL`) — not 20 times a second per agent. (An ACP
        runner outlives its turn: only a look at its exit record finds a turn's end.)"""
        poll = self.limits.poll
        if not ended.watching or live.transport.name == acp.ACP:
            return poll
        shortest = min(self.limits.stall_after, self.limits.wall_clock)
        return max(poll, min(WATCHED_POLL, shortest / 10))

    async def _pump(self, live: Live) -> None:
        """Parse the output as it comes: the lines read at once go to the bus as one batch
        (one commit, the offset past the last of them), so the loop's work per line is the
        parsing; a backlog is taken :data:`PUMP_BATCH` lines at a time, letting the loop
        serve others between two."""
        tailer = live.tailer
        while lines := await tailer.batch(PUMP_BATCH):
            live.last_output = time.monotonic()
            events: list[Event] = []
            for line in lines:
                events += live.masking.events(live.parser.feed(line))
            if events:
                await self._emit(live, events, wait=False)
            if tailer.buffered:
                await asyncio.sleep(0)
        live.attempt.out_offset = tailer.offset

    async def _pump_stderr(self, live: Live, adopted: bool) -> None:
        """Feed the stderr lines to a parser that reads them (:class:`StderrReader`).

        ``adopted``: another broker followed this attempt before, so the lines already
        written were seen then; they rebuild the parser's state without being emitted again.
        """
        parser = live.parser
        if not isinstance(parser, StderrReader):
            return
        path = Path(live.attempt.err_path)
        seen = path.stat().st_size if adopted and path.exists() else 0
        tailer = Tailer(path)
        try:
            async for line in tailer:
                events = live.masking.events(parser.feed_stderr(line))
                if events and tailer.offset > seen:
                    await self._emit(live, events, wait=False)
        except Exception as exc:  # stdout still decides; stderr only helps
            log.debug("stderr of %s not followed: %s", live.task.id, exc)
        finally:
            tailer.close()

    async def _emit(self, live: Live, events: Sequence[Event], wait: bool = True) -> None:
        task, attempt = live.task, live.attempt
        secrets = self.book.secrets.get(task.id, [])
        stamped = [
            dataclasses.replace(e, task_id=task.id, attempt=attempt.n, data=redact(e.data, secrets))
            for e in events
        ]
        for e in stamped:
            live.outcome.observe(e)
            if live.side:
                continue
            if e.type == EventType.SESSION and e.data.get("id"):
                task.session_id = attempt.session_id = str(e.data["id"])
            elif e.type == EventType.TOOL and e.data.get("files"):
                self.on_files(task)
            elif e.type == EventType.PERMISSION:
                self._track_permission(live, e.data)
            elif e.type == EventType.PLAN:
                task.options["plan"] = list(e.data.get("entries") or [])
            elif e.type == EventType.ERROR and e.data.get("stop") and live.stop is None:
                # The parser saw the agent stuck for good (e.g. retrying a dead server
                # forever): end the process; the error event says how the attempt ended.
                kill = procs.kill_tree(live.record.pid, self.limits.kill_grace)
                self._spawn(kill)
        if not stamped:
            return
        if self.watcher is not None and not live.side:
            self.watcher.seen(live, stamped)
        fut = self.book.bus.emit_nowait(stamped, (task.id, attempt.n, live.tailer.offset))
        if wait:
            with contextlib.suppress(Exception):
                await fut
        else:
            live.confirm()
            live.unconfirmed.append(fut)

    # ------------------------------------------------------------------ permissions

    def _track_permission(self, live: Live, data: Mapping[str, Any]) -> None:
        """An ACP permission request opened or closed: the task waits in needs_input while
        any is open (and the idle watchdog does not count that time)."""
        asking = self.asking.setdefault(live.task.id, {})
        if data.get("status") == "pending":
            asking[str(data.get("id"))] = dict(data)
        else:
            asking.pop(str(data.get("id")), None)
        self._spawn(self._permission_state(live))

    async def _permission_state(self, live: Live) -> None:
        task = live.task
        if self.live.get(task.id) is not live or live.attempt.ended_at is not None:
            return
        asking = self.asking.get(task.id)
        async with self.book.lock(task.id):
            if asking and task.state == S.RUNNING:
                first = next(iter(asking.values()))
                await self.book.move(task, S.NEEDS_INPUT, f"asks permission: {first.get('tool')}")
            elif not asking and task.state == S.NEEDS_INPUT:
                await self.book.move(task, S.RUNNING, "permission answered")

    def _spawn(self, coro: Any) -> None:
        t = asyncio.get_running_loop().create_task(coro)
        self._background.add(t)
        t.add_done_callback(self._background.discard)

    async def close(self) -> None:
        self.closed = True
        for live in list(self.live.values()):
            live.tailer.finish()
        for t in list(self._background):
            t.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
