"""``python -m baton.acp.session_runner <spec.json>``: one task's ACP session, outside the broker.

The broker starts this session runner detached (through :mod:`baton.process.wrap`, like any
agent), so the agent outlives an editor restart. It starts the agent with its stdio on pipes,
bound to its own life (:func:`baton.process.reaper.bound`: the agent dies with the runner,
which dies with its wrapper), speaks ACP to it, and writes each prompt turn's events and
exit record to the same attempt files a native agent's wrapper writes
(:mod:`baton.acp.attempt_files`). Between turns the session stays open; the broker sends
follow-up prompts, cancels, and permission answers over the control socket
(:mod:`baton.acp.control`). Permission requests the policy does not answer wait for the
user (:mod:`baton.acp.permission_requests`).

The runner ends when told to, when its agent exits, when the task's worktree is removed (the
task was accepted or rejected), or after ``idle_exit`` seconds without a turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, cast

import acp
import psutil
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    ToolCallUpdate,
    WriteTextFileResponse,
)

from baton.acp import control, files
from baton.acp.attempt_files import AttemptFiles
from baton.acp.permission_requests import PermissionRequests
from baton.acp.policy import make_policy
from baton.acp.session import Session, text_of
from baton.acp.spec import Spec
from baton.acp.translate import TurnTranslator, is_empty_turn, usage_events
from baton.core import events
from baton.core.events import Event, EventType
from baton.process.reaper import bound, end, strays

log = logging.getLogger("baton.acp.session_runner")

STDIO_LIMIT = 50 * 1024 * 1024


class SessionRunner:
    """The ACP client of one task: holds the session, writes events, obeys the socket."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.task_dir = Path(spec.task_dir)
        self.root = files.worktree_root(spec.cwd)
        self.attempt_files = AttemptFiles(self.task_dir, spec.attempt)
        self.emit = self.attempt_files.emit
        self.log = self.attempt_files.log
        self.permissions = PermissionRequests(make_policy(spec.policy), self.root, self.emit)
        self.session: Session | None = None  # once the agent is started
        self.busy = False
        self.cancelling = False
        self.translator: TurnTranslator | None = None
        self.stop = asyncio.Event()
        self.last_active = time.monotonic()
        self._turns: set[asyncio.Task[None]] = set()
        self._loop_cancel_sent = False

    # ------------------------------------------------------------------ ACP client methods

    def on_connect(self, conn: Any) -> None:
        pass

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        """Updates are read from the raw frames (see :meth:`observe`): nothing to do here."""

    def observe(self, event: StreamEvent) -> None:
        """Every frame, in order, before it is handled: session updates become events."""
        if event.direction != StreamDirection.INCOMING:
            return
        msg = event.message
        if msg.get("method") != "session/update" or (self.session and self.session.replaying):
            return
        params = msg.get("params")
        translator = self.translator
        if not isinstance(params, dict) or translator is None:
            return
        update = params.get("update")
        if isinstance(update, dict):
            self.last_active = time.monotonic()
            self.emit(translator.update(update))
            if translator.looping and not self._loop_cancel_sent:
                self._loop_cancel_sent = True
                self._spawn(self._cancel_agent(), "stop a looping turn")

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kw: Any,
    ) -> RequestPermissionResponse:
        call = tool_call.model_dump(by_alias=True, exclude_none=True, mode="json")
        opts = [o.model_dump(by_alias=True, exclude_none=True, mode="json") for o in options]
        chosen = await self.permissions.request(call, opts, cancelling=self.cancelling)
        self.last_active = time.monotonic()
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen)
        )

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kw: Any,
    ) -> ReadTextFileResponse:
        try:
            text = await asyncio.to_thread(files.read_text, path, self.root, line, limit)
        except files.OutsideWorktree as exc:
            self.log(str(exc), "warning")
            raise acp.RequestError.invalid_params({"path": path, "reason": str(exc)}) from None
        return ReadTextFileResponse(content=text)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kw: Any
    ) -> WriteTextFileResponse:
        try:
            await asyncio.to_thread(files.write_text, path, content, self.root)
        except files.OutsideWorktree as exc:
            self.log(str(exc), "warning")
            raise acp.RequestError.invalid_params({"path": path, "reason": str(exc)}) from None
        return WriteTextFileResponse()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise acp.RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    # ------------------------------------------------------------------ the control socket

    async def serve(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        self.last_active = time.monotonic()
        match op:
            case "prompt":
                return self._prompt_request(request)
            case "cancel":
                busy = self.busy
                if busy:
                    await self.cancel_turn()
                return {"ok": True, "busy": busy}
            case "answer":
                return self.permissions.answer(request.get("id"), request.get("option"))
            case "status":
                return {
                    "ok": True,
                    "busy": self.busy,
                    "session": self.session.id if self.session else None,
                    "pending": sorted(self.permissions.waiting),
                    "pid": os.getpid(),
                }
            case "stop":
                self.stop.set()
                return {"ok": True}
            case _:
                return {"ok": False, "error": f"unknown op {op!r}"}

    def _prompt_request(self, request: dict[str, Any]) -> dict[str, Any]:
        attempt, text = request.get("attempt"), request.get("text")
        if not isinstance(attempt, int) or not isinstance(text, str):
            return {"ok": False, "error": "prompt needs attempt (int) and text (str)"}
        if self.busy or self.session is None:
            why = "a turn is running" if self.busy else "the session is not open yet"
            return {"ok": False, "error": f"{why}; cancel it first", "busy": True}
        if not self.attempt_files.claim(attempt):
            return {"ok": False, "error": f"another process already runs attempt {attempt}"}
        self._open_turn(attempt)
        self._spawn(self.turn(attempt, text, str(request.get("reason") or "reply")), "turn")
        return {"ok": True}

    # ------------------------------------------------------------------ turns

    def _open_turn(self, attempt: int) -> None:
        """Point the event output at ``attempt-<n>.out`` (created now, so a tail can open it)."""
        self.busy = True
        self.cancelling = False
        self.permissions.rejected = ""
        self._loop_cancel_sent = False
        self.attempt_files.open(attempt)

    def _close_turn(self, attempt: int) -> None:
        self.attempt_files.close(attempt)
        self.busy = False
        self.last_active = time.monotonic()

    async def turn(self, attempt: int, text: str, reason: str) -> None:
        """Run one prompt turn to its end; its events go to ``attempt-<n>.out``."""
        try:
            await self._turn(text)
        except Exception as exc:  # the agent died, or the connection broke
            log.exception("turn %s failed", attempt)
            self.emit([events.error("worker_error", f"the ACP agent failed: {exc}")])
            self.stop.set()
        finally:
            try:
                await self._end_strays()
            finally:
                self._close_turn(attempt)

    async def _end_strays(self) -> None:
        """End what the turn left running whose parent is gone (a tool's background job):
        orphans come to our wrapper, their subreaper. The agent's own children (helpers it
        keeps across turns) stay; the wrapper ends them with the rest when we exit."""
        me = os.getpid()
        with contextlib.suppress(Exception):
            await asyncio.to_thread(end, lambda: strays(self.attempt_files.wrapper, me), 1.0)

    async def _turn(self, text: str) -> None:
        session = self.session
        assert session is not None
        prompt = text
        if session.fresh_next:
            prompt = await session.renew(text)
        self.emit([Event(EventType.SESSION, {"id": session.id, "transport": "acp"})])
        if self.cancelling:  # cancelled before the prompt could be sent
            self.emit([events.error("cancelled", "the turn was cancelled before it started")])
            return
        for retry in (False, True):
            translator = TurnTranslator(self.root, guard_repeats=self.spec.guard_repeats)
            self.translator = translator
            try:
                response = await session.prompt(prompt)
            except acp.RequestError as exc:
                self.emit(translator.failure(exc.code, str(exc), exc.data))
                session.fresh_next = self.spec.fresh_session_after_abort
                session.history.append((text, "(the turn failed)"))
                return
            finally:
                self.translator = None
            if (
                not retry
                and self.spec.fresh_session_after_abort
                and not self.cancelling
                and is_empty_turn(response, translator)
            ):
                self.log("the agent answered with an empty turn; starting a new session")
                prompt = await session.renew(text)
                self.emit([Event(EventType.SESSION, {"id": session.id, "transport": "acp"})])
                continue
            stop = response.get("stopReason")
            rejected = self.permissions.rejected
            if stop == "cancelled" and rejected and not self.cancelling:
                # Some agents (Codex) end the whole turn when a permission is rejected: that
                # is the user's answer, not a failure.
                self.emit(usage_events(response))
                said = translator.text or f"Stopped: the user rejected {rejected}."
                self.emit([Event(EventType.FINAL, {"text": said, "rejected": rejected})])
                session.history.append((text, said))
                return
            self.emit(translator.finish(response, flag_zero_usage=self.spec.flag_zero_usage))
            if stop != "end_turn" or translator.looping:
                session.fresh_next = self.spec.fresh_session_after_abort
            session.history.append((text, translator.text or f"(stopped: {stop})"))
            return

    async def cancel_turn(self) -> None:
        """``session/cancel``: the turn ends as cancelled; the session stays open."""
        self.cancelling = True
        self.permissions.cancel_all()
        await self._cancel_agent()

    async def _cancel_agent(self) -> None:
        if self.session is not None:
            await self.session.cancel()

    async def run(self) -> int:
        """Start the agent, run the first turn, then serve follow-ups until told to stop."""
        spec = self.spec
        self._open_turn(spec.attempt)
        server = await control.listen(spec.socket, self.serve)
        control.RunnerRecord(
            socket=spec.socket,
            pid=self.attempt_files.wrapper,
            create_time=self.attempt_files.wrapper_created,
            err_path=self.attempt_files.err_path,
            started_at=time.time(),
        ).save(self.task_dir)
        env = dict(os.environ)
        try:
            argv = bound(spec.argv, os.getpid())  # the agent dies with us, even by SIGKILL
            async with acp.spawn_agent_process(
                cast(acp.Client, self),
                argv[0],
                *argv[1:],
                env=env,
                cwd=spec.cwd,
                transport_kwargs={"stderr": sys.stderr, "limit": STDIO_LIMIT},
                observers=[self.observe],
            ) as (conn, proc):
                self.session = Session(conn, spec, self.log)
                if not await self._start(self.session):
                    return 1
                first = text_of(spec.prompt_file)
                self._spawn(self.turn(spec.attempt, first, spec.reason), "first turn")
                await self._serve_until_done(proc)
                self.permissions.cancel_all()
        finally:
            server.close()
            with contextlib.suppress(OSError):
                os.unlink(spec.socket)
            await stop_descendants()
        return 0

    async def _start(self, session: Session) -> bool:
        try:
            await session.start()
        except Exception as exc:
            why = str(exc) or type(exc).__name__
            self.emit([events.error("worker_error", f"the ACP agent did not start: {why}")])
            self._close_turn(self.spec.attempt)
            return False
        return True

    async def _serve_until_done(self, proc: asyncio.subprocess.Process) -> None:
        agent_exit = asyncio.ensure_future(proc.wait())
        try:
            while not self.stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(agent_exit), 1.0)
                if agent_exit.done():
                    if self.busy:  # the turn sees the broken connection and ends
                        await asyncio.sleep(0.5)
                    break
                if not os.path.isdir(self.root) or not self.task_dir.is_dir():
                    log.info("the worktree or the task's folder is gone: ending")
                    break
                idle = time.monotonic() - self.last_active
                if not self.busy and not self.permissions.waiting and idle > self.spec.idle_exit:
                    log.info("idle for %.0f s: ending", idle)
                    break
        finally:
            if self.busy:
                await self.cancel_turn()
                for t in list(self._turns):
                    with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                        await asyncio.wait_for(asyncio.shield(t), 3.0)
            # The agent and everything under it, collected before any of it is signalled
            # (a launcher that dies first would orphan its real binary).
            await stop_descendants()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(agent_exit), 3.0)

    def _spawn(self, coro: Any, name: str) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro, name=name)
        self._turns.add(task)
        task.add_done_callback(self._turns.discard)


async def stop_descendants(grace: float = 3.0) -> None:
    """End whatever the agent left running: launchers (npm's node shims) often leave their
    real binary (codex-acp's native one) behind when they are terminated themselves."""
    try:
        left = psutil.Process().children(recursive=True)
    except psutil.Error:
        return
    for proc in left:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = await asyncio.to_thread(psutil.wait_procs, left, grace)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()


class _QuietUpdates(logging.Filter):
    """The ACP library logs every update it cannot validate; Baton reads the raw frames."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "session/update" not in record.getMessage()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m baton.acp.session_runner <spec.json>", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="baton-acp: %(message)s")
    logging.getLogger().addFilter(_QuietUpdates())
    spec = Spec.load(argv[0])
    return asyncio.run(SessionRunner(spec).run())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
