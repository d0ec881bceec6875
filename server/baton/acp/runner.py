"""``python -m baton.acp.runner <spec.json>``: one task's ACP session, held outside the broker.

The broker starts this runner detached (through :mod:`baton.process.wrap`, like any agent), so
the agent outlives an editor restart. The runner starts the agent with its stdio on pipes, bound
to the runner's life (:func:`baton.process.reaper.bound`: it dies with the runner, which dies
with its wrapper),
speaks ACP to it, and for each prompt turn *k* writes Baton's normalized events as JSON lines
to ``attempt-<k>.out`` in the task's folder and, when the turn ends, an exit record to
``attempt-<k>.exit`` — exactly what the broker tails for a native agent, so following,
persisting and adopting an attempt work the same. It also holds the claim of each turn it
takes (``attempt-<k>.lock`` / ``.pid``, naming its wrapper) for the rest of its life, so
:func:`baton.process.spawn.find_attempt` finds an ACP turn as it finds a native one. Between
turns the session stays open; the broker sends follow-up prompts, cancels, and permission
answers over the control socket (:mod:`baton.acp.control`).

Secret values (named by ``BATON_MASK_ENV`` in the environment the runner shares with its
agent, as for the wrapper) are masked in every event line it writes; a secret spread over
several events is masked by the broker, which reads those lines as one text stream.

A permission request the policy does not answer waits — with or without a broker attached —
until an answer comes over the socket or the turn is cancelled. The runner ends when told to,
when its agent exits, when the task's worktree is removed (the task was accepted or rejected),
or after ``idle_exit`` seconds without a turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import acp
import psutil
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    ToolCallUpdate,
    WriteTextFileResponse,
)

from baton import __version__
from baton.acp import control, files
from baton.acp.policy import Decision, decide, make_policy
from baton.acp.spec import Spec
from baton.acp.translate import (
    TurnTranslator,
    is_empty_turn,
    option_for_decision,
    paths_of,
    permission_event,
    pick_option,
    usage_events,
)
from baton.core import events
from baton.core.events import Event, EventType
from baton.core.masking import prepare, redact, values_from_env
from baton.process.reaper import bound, end, strays
from baton.process.wrap import take_lock, write_claim, write_exit

log = logging.getLogger("baton.acp.runner")

#: Seconds the agent gets to answer ``initialize`` and open a session.
START_TIMEOUT = 120.0
STDIO_LIMIT = 50 * 1024 * 1024


@dataclass(slots=True)
class _Pending:
    future: asyncio.Future[str | None]
    options: list[dict[str, Any]]
    tool_call: dict[str, Any]


class Runner:
    """The ACP client of one task: holds the session, writes events, obeys the socket."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.task_dir = Path(spec.task_dir)
        self.root = files.worktree_root(spec.cwd)
        self.policy: dict[str, Decision] = make_policy(spec.policy)
        self.conn: acp.ClientSideConnection | None = None
        self.session_id: str | None = None
        self.can_load = False
        self.busy = False
        self.cancelling = False
        self.fresh_next = False  # start the next turn in a new session, carrying the context
        self.rejected = ""  # what the user rejected in this turn, if anything
        self.replaying = False
        self.translator: TurnTranslator | None = None
        self.pending: dict[str, _Pending] = {}
        self.history: list[tuple[str, str]] = []  # (prompt, answer) of this runner's turns
        self.stop = asyncio.Event()
        self.last_active = time.monotonic()
        self._out: Any = None
        self._secrets = prepare(values_from_env(os.environ))  # masked in what is written
        self._perm_seq = 0
        self._turns: set[asyncio.Task[None]] = set()
        self._loop_cancel_sent = False
        self.wrapper = os.getppid()  # the process a broker records for every turn of ours
        try:
            self.wrapper_created = float(psutil.Process(self.wrapper).create_time())
        except psutil.Error:
            self.wrapper_created = 0.0
        self._claims: dict[int, int] = {}  # attempt → the descriptor holding its lock

    # ------------------------------------------------------------------ events out

    def emit(self, evs: Sequence[Event]) -> None:
        if self._out is None:
            return
        for e in evs:
            line = redact(e.to_json(), self._secrets)
            self._out.write(json.dumps(line).encode() + b"\n")
        self._out.flush()

    def _log(self, message: str, level: str = "info") -> None:
        self.emit([Event(EventType.LOG, {"level": level, "message": message})])

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
        if msg.get("method") != "session/update" or self.replaying:
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
        self._perm_seq += 1
        perm_id = f"p{self._perm_seq}"
        decision = decide(self.policy, call.get("kind"), paths_of(call), self.root)
        if decision != "ask":
            chosen = option_for_decision(opts, decision)
            if chosen is not None:
                self.emit(
                    [
                        permission_event(
                            perm_id, call, opts, self.root, status="answered", answer=chosen,
                            by="policy",
                        )
                    ]
                )  # fmt: skip
                return _selected(chosen)
        if self.cancelling:
            return _cancelled()
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self.pending[perm_id] = _Pending(future, opts, call)
        self.emit([permission_event(perm_id, call, opts, self.root)])
        try:
            chosen_id = await future
        finally:
            self.pending.pop(perm_id, None)
        self.last_active = time.monotonic()
        if chosen_id is None:
            self.emit([permission_event(perm_id, call, opts, self.root, status="cancelled")])
            return _cancelled()
        kind = next((o.get("kind") for o in opts if o.get("optionId") == chosen_id), "")
        if str(kind).startswith("reject"):
            self.rejected = str(call.get("title") or call.get("kind") or "a tool call")
        self.emit(
            [
                permission_event(
                    perm_id, call, opts, self.root, status="answered", answer=chosen_id, by="user"
                )
            ]
        )
        return _selected(chosen_id)

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
            self._log(str(exc), "warning")
            raise acp.RequestError.invalid_params({"path": path, "reason": str(exc)}) from None
        return ReadTextFileResponse(content=text)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kw: Any
    ) -> WriteTextFileResponse:
        try:
            await asyncio.to_thread(files.write_text, path, content, self.root)
        except files.OutsideWorktree as exc:
            self._log(str(exc), "warning")
            raise acp.RequestError.invalid_params({"path": path, "reason": str(exc)}) from None
        return WriteTextFileResponse()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise acp.RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    # ------------------------------------------------------------------ the control socket

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), control.TIMEOUT)
            try:
                request = json.loads(line)
                answer = await self.serve(request if isinstance(request, dict) else {})
            except ValueError:
                answer = {"ok": False, "error": "not a JSON request"}
            writer.write(json.dumps(answer).encode() + b"\n")
            await writer.drain()
        except (OSError, TimeoutError):
            pass
        finally:
            writer.close()

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
                return self._answer(request)
            case "status":
                return {
                    "ok": True,
                    "busy": self.busy,
                    "session": self.session_id,
                    "pending": sorted(self.pending),
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
        if self.busy or self.conn is None:
            why = "a turn is running" if self.busy else "the session is not open yet"
            return {"ok": False, "error": f"{why}; cancel it first", "busy": True}
        if not self._claim(attempt):
            return {"ok": False, "error": f"another process already runs attempt {attempt}"}
        self._open_turn(attempt)
        self._spawn(self.turn(attempt, text, str(request.get("reason") or "reply")), "turn")
        return {"ok": True}

    def _answer(self, request: dict[str, Any]) -> dict[str, Any]:
        perm_id, option = request.get("id"), request.get("option")
        if not self.pending:
            return {"ok": False, "error": "no permission request is waiting for an answer"}
        if perm_id is None and len(self.pending) == 1:
            perm_id = next(iter(self.pending))
        pending = self.pending.get(str(perm_id))
        if pending is None:
            waiting = ", ".join(sorted(self.pending))
            return {"ok": False, "error": f"no waiting permission {perm_id!r}; waiting: {waiting}"}
        chosen = pick_option(pending.options, str(option or ""))
        if chosen is None:
            names = ", ".join(f"{o.get('optionId')} ({o.get('kind')})" for o in pending.options)
            return {"ok": False, "error": f"unknown option {option!r}; options: {names}"}
        if not pending.future.done():
            pending.future.set_result(chosen["id"])
        return {"ok": True, "id": perm_id, "option": chosen}

    # ------------------------------------------------------------------ turns

    def _claim(self, attempt: int) -> bool:
        """Hold attempt ``attempt``'s claim for the rest of this runner's life (as a wrapper
        holds its own), naming our wrapper, so a broker that lost its memory finds the turn
        with :func:`baton.process.spawn.find_attempt`. The first turn's claim is the wrapper's."""
        if attempt == self.spec.attempt or attempt in self._claims:
            return True
        stem = self.task_dir / f"attempt-{attempt}"
        fd = take_lock(f"{stem}.lock")
        if fd is None:
            return False
        self._claims[attempt] = fd
        err = str(self.task_dir / f"attempt-{self.spec.attempt}.err")
        write_claim(f"{stem}.pid", self.wrapper, self.wrapper_created, err_path=err)
        return True

    def _open_turn(self, attempt: int) -> None:
        """Point the event output at ``attempt-<n>.out`` (created now, so a tail can open it)."""
        self.busy = True
        self.cancelling = False
        self.rejected = ""
        self._loop_cancel_sent = False
        (self.task_dir / f"attempt-{attempt}.exit").unlink(missing_ok=True)
        if self._out is not None:
            self._out.close()
        self._out = open(self.task_dir / f"attempt-{attempt}.out", "ab")  # noqa: SIM115

    def _close_turn(self, attempt: int) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None
        record = {"exit": 0, "signal": None, "received": None, "error": None}
        write_exit(
            str(self.task_dir / f"attempt-{attempt}.exit"), {**record, "ended_at": time.time()}
        )
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
            await asyncio.to_thread(end, lambda: strays(self.wrapper, me), 1.0)

    async def _turn(self, text: str) -> None:
        prompt = text
        if self.fresh_next:
            prompt = await self._fresh_session(text)
        self.emit([Event(EventType.SESSION, {"id": self.session_id, "transport": "acp"})])
        if self.cancelling:  # cancelled before the prompt could be sent
            self.emit([events.error("cancelled", "the turn was cancelled before it started")])
            return
        for retry in (False, True):
            translator = TurnTranslator(self.root, guard_repeats=self.spec.guard_repeats)
            self.translator = translator
            try:
                response = await self._prompt(prompt)
            except acp.RequestError as exc:
                self.emit(translator.failure(exc.code, str(exc), exc.data))
                self.fresh_next = self.spec.fresh_session_after_abort
                self.history.append((text, "(the turn failed)"))
                return
            finally:
                self.translator = None
            if (
                not retry
                and self.spec.fresh_session_after_abort
                and not self.cancelling
                and is_empty_turn(response, translator)
            ):
                self._log("the agent answered with an empty turn; starting a new session")
                prompt = await self._fresh_session(text)
                self.emit([Event(EventType.SESSION, {"id": self.session_id, "transport": "acp"})])
                continue
            stop = response.get("stopReason")
            if stop == "cancelled" and self.rejected and not self.cancelling:
                # Some agents (Codex) end the whole turn when a permission is rejected: that
                # is the user's answer, not a failure.
                self.emit(usage_events(response))
                said = translator.text or f"Stopped: the user rejected {self.rejected}."
                self.emit([Event(EventType.FINAL, {"text": said, "rejected": self.rejected})])
                self.history.append((text, said))
                return
            self.emit(translator.finish(response, flag_zero_usage=self.spec.flag_zero_usage))
            if stop != "end_turn" or translator.looping:
                self.fresh_next = self.spec.fresh_session_after_abort
            self.history.append((text, translator.text or f"(stopped: {stop})"))
            return

    async def _prompt(self, text: str) -> dict[str, Any]:
        assert self.conn is not None and self.session_id is not None
        response = await self.conn.prompt(session_id=self.session_id, prompt=[acp.text_block(text)])
        dumped: dict[str, Any] = response.model_dump(by_alias=True, exclude_none=True, mode="json")
        return dumped

    async def cancel_turn(self) -> None:
        """``session/cancel``: the turn ends as cancelled; the session stays open."""
        self.cancelling = True
        for pending in list(self.pending.values()):
            if not pending.future.done():
                pending.future.set_result(None)
        await self._cancel_agent()

    async def _cancel_agent(self) -> None:
        if self.conn is not None and self.session_id is not None:
            with contextlib.suppress(Exception):
                await self.conn.cancel(session_id=self.session_id)

    async def _fresh_session(self, text: str) -> str:
        """A new session whose first prompt carries what the old one knew."""
        self.fresh_next = False
        old = self.session_id
        await self._new_session()
        self._log(f"continuing in a new session {self.session_id} (the old one was {old})")
        return self._carried(text)

    def _carried(self, text: str) -> str:
        brief = _read(self.spec.brief_file).strip()
        lines = ["(Baton: this continues earlier work on the same task in a new session.)"]
        if brief:
            lines += ["", "The task:", brief]
        if self.history:
            lines += ["", "Earlier in this task:"]
            for asked, said in self.history[-5:]:
                lines.append(f"- asked: {asked.strip()[:500]}")
                lines.append(f"  you answered: {said.strip()[:500]}")
        lines += ["", "The work so far is in the current folder. Now:", text]
        return "\n".join(lines)

    # ------------------------------------------------------------------ the session

    async def _new_session(self) -> None:
        assert self.conn is not None
        resp = await asyncio.wait_for(
            self.conn.new_session(cwd=self.spec.cwd, mcp_servers=[]), START_TIMEOUT
        )
        self.session_id = resp.session_id

    async def open_session(self) -> None:
        """Continue the spec's session when the agent can load it; else a new one."""
        assert self.conn is not None
        wanted = self.spec.session_id
        if wanted and self.can_load:
            self.replaying = True  # a loaded session replays its history as updates
            try:
                await asyncio.wait_for(
                    self.conn.load_session(cwd=self.spec.cwd, session_id=wanted, mcp_servers=[]),
                    START_TIMEOUT,
                )
                self.session_id = wanted
                return
            except Exception as exc:
                log.warning("could not load session %s: %s", wanted, exc)
            finally:
                self.replaying = False
        await self._new_session()
        if wanted:
            self.fresh_next = True  # the first prompt carries the context over

    async def run(self) -> int:
        """Start the agent, run the first turn, then serve follow-ups until told to stop."""
        spec = self.spec
        self._open_turn(spec.attempt)
        server = await asyncio.start_unix_server(self.handle, path=spec.socket)
        os.chmod(spec.socket, 0o600)
        control.RunnerRecord(
            socket=spec.socket,
            pid=self.wrapper,
            create_time=self.wrapper_created,
            err_path=str(self.task_dir / f"attempt-{spec.attempt}.err"),
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
                self.conn = conn
                if not await self._start(spec):
                    return 1
                first = _read(spec.prompt_file)
                self._spawn(self.turn(spec.attempt, first, spec.reason), "first turn")
                await self._serve_until_done(proc)
                for pending in self.pending.values():
                    if not pending.future.done():
                        pending.future.set_result(None)
        finally:
            server.close()
            with contextlib.suppress(OSError):
                os.unlink(spec.socket)
            await stop_descendants()
        return 0

    async def _start(self, spec: Spec) -> bool:
        assert self.conn is not None
        try:
            init = await asyncio.wait_for(
                self.conn.initialize(
                    protocol_version=acp.PROTOCOL_VERSION,
                    client_capabilities=ClientCapabilities(
                        fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                        terminal=False,
                    ),
                    client_info=Implementation(name="baton", title="Baton", version=__version__),
                ),
                START_TIMEOUT,
            )
            caps = init.agent_capabilities
            self.can_load = bool(caps and caps.load_session)
            await self.open_session()
        except Exception as exc:
            why = str(exc) or type(exc).__name__
            self.emit([events.error("worker_error", f"the ACP agent did not start: {why}")])
            self._close_turn(spec.attempt)
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
                if not self.busy and not self.pending and idle > self.spec.idle_exit:
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


def _selected(option_id: str) -> RequestPermissionResponse:
    return RequestPermissionResponse(
        outcome=AllowedOutcome(outcome="selected", option_id=option_id)
    )


def _cancelled() -> RequestPermissionResponse:
    return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8") if path else ""
    except OSError:
        return ""


class _QuietUpdates(logging.Filter):
    """The ACP library logs every update it cannot validate; Baton reads the raw frames."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "session/update" not in record.getMessage()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m baton.acp.runner <spec.json>", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="baton-acp: %(message)s")
    logging.getLogger().addFilter(_QuietUpdates())
    spec = Spec.load(argv[0])
    return asyncio.run(Runner(spec).run())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
