"""The broker's side of the ACP transport.

:class:`AcpTransport` is the :class:`~baton.process.transport.Transport` of an ACP session: its
``start`` sends a follow-up turn to the task's session runner (:mod:`baton.acp.session_runner`)
when one is alive (same session) and starts a new runner otherwise; its ``parser`` reads the
normalized events the runner writes; its ``interrupt`` is a ``session/cancel`` that keeps the
session, or a kill when the runner does not answer. :func:`answer` and :func:`stop` talk to
the runner's control socket.

Which transport a task uses is decided once per session (:func:`choose`): the profile's
``options.transport`` (``acp`` | ``native`` | ``auto``, default ``auto``); ``auto`` means ACP
where the agent's ACP command is installed and was seen to work (:mod:`baton.acp.probe`),
native otherwise. :func:`transport_for` gives the transport of that choice.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from baton.acp import agents, control, probe
from baton.acp.control import ControlError
from baton.acp.policy import make_policy
from baton.acp.spec import Spec
from baton.agents.base import Launch, Turn
from baton.agents.fake import write_prompt
from baton.agents.registry import adapter_for
from baton.config.profiles import Profile
from baton.core import events
from baton.core.events import Event, EventType
from baton.process import spawn as procs
from baton.process.sandbox import UNCONFINED
from baton.process.transport import (
    ACP,
    NATIVE,
    NativeTransport,
    Started,
    Transport,
    confinement_for,
)

#: Seconds a new runner gets to open its control socket before a cancel falls back to a kill.
SOCKET_WAIT = 5.0


class AcpParser:
    """Reads the runner's JSON lines: each already is a normalized event."""

    def __init__(self) -> None:
        self.ended = False

    def feed(self, line: str) -> list[Event]:
        if not line.strip():
            return []
        try:
            event = Event.from_json(json.loads(line))
        except (ValueError, KeyError, TypeError, AttributeError):
            return [Event(EventType.LOG, {"level": "warning", "message": f"unparsed: {line}"})]
        if event.type in (EventType.FINAL, EventType.ERROR, EventType.QUESTION):
            self.ended = True
        return [Event(event.type, event.data)]

    def finish(self, exit_code: int | None, stderr_tail: str) -> list[Event]:
        if self.ended:
            return []
        self.ended = True
        how = "vanished" if exit_code is None else f"ended with exit code {exit_code}"
        message = f"the ACP runner {how} before the turn finished"
        if stderr_tail.strip():
            message += ": " + stderr_tail.strip()[-1500:]
        return [events.error("worker_error", message, exit_code=exit_code)]


class AcpTransport:
    """The ACP transport of one provider: one runner per session, one prompt per attempt."""

    name = ACP

    def __init__(self, provider: str) -> None:
        self.provider = provider

    def parser(self) -> AcpParser:
        return AcpParser()

    def launch_attempt(self, turn: Turn, profile: Profile, attempt: int) -> tuple[Launch, str]:
        """A new runner for ``turn`` (its spec and prompt written to the task's folder), and
        how the agent it starts runs (sandboxed or not, for the task's log)."""
        spec_of = agents.spec_for(profile)
        if spec_of is None:
            raise KeyError(f"{profile.provider} has no ACP transport")
        argv, env = agents.command(profile, turn)
        task_dir = Path(turn.task_dir)
        task_dir.mkdir(parents=True, exist_ok=True)
        # The runner is Baton's own and stays outside; the agent it starts is sandboxed.
        agent = Launch(argv=argv, env=env, cwd=turn.cwd, unset_env=spec_of.unset_env)
        confinement = confinement_for(agent, task_dir, turn, profile)
        env = {**env, **confinement.env}
        prompt_file = write_prompt(turn, "acp-prompt")
        brief_file = task_dir / "acp-brief.txt"
        if turn.reason in ("first", "handoff") or not brief_file.exists():
            brief_file.write_text(turn.prompt, encoding="utf-8")
        policy = profile.options.get("permissions")
        spec = Spec(
            argv=confinement.wrap(argv),
            cwd=turn.cwd,
            task_dir=str(task_dir),
            attempt=attempt,
            prompt_file=str(prompt_file),
            reason=turn.reason,
            session_id=turn.session_id,
            brief_file=str(brief_file),
            policy=dict(make_policy(policy if isinstance(policy, dict) else None)),
            fresh_session_after_abort=spec_of.fresh_session_after_abort,
            guard_repeats=spec_of.guard_repeats,
            flag_zero_usage=spec_of.flag_zero_usage,
            idle_exit=float(profile.options.get("acp_idle_exit") or 1800.0),
            socket=str(control.socket_path(task_dir)),
        )
        spec_path = task_dir / f"acp-spec-{attempt}.json"
        spec_path.write_text(json.dumps(spec.to_json(), indent=1), encoding="utf-8")
        runner = Launch(
            argv=[agents.python(), "-P", "-m", "baton.acp.session_runner", str(spec_path)],
            env=env,
            cwd=turn.cwd,
            unset_env=spec_of.unset_env,
        )
        note = confinement.note
        if profile.worker_mcp:
            note += (
                "; warning: worker_mcp is not applied on the ACP transport (its agent starts"
                " the MCP servers of its own config)"
            )
        return runner, note

    async def start(self, turn: Turn, profile: Profile, attempt: int) -> Started:
        """Start turn ``attempt``: a prompt to the task's live runner, else a new runner."""
        if not turn.task_dir:
            raise ValueError("a turn needs its task's folder to start an attempt")
        task_dir = Path(turn.task_dir)
        record = control.RunnerRecord.load(task_dir)
        if record is not None and procs.is_alive(record.pid, record.create_time):
            request = {"op": "prompt", "attempt": attempt, "text": turn.prompt}
            try:
                await control.call(record.socket, {**request, "reason": turn.reason})
            except control.ControlError:
                await procs.kill_tree(record.pid, 2.0, record.create_time)
            else:
                out, _, exit_path = procs.attempt_paths(task_dir, attempt)
                proc = procs.ProcessRecord(
                    record.pid, out, Path(record.err_path), exit_path, time.time(),
                    record.create_time,
                )  # fmt: skip
                return Started(proc, "the same session in the task's runner")
        (task_dir / control.RECORD).unlink(missing_ok=True)
        launch, note = self.launch_attempt(turn, profile, attempt)
        proc = await asyncio.to_thread(procs.spawn, launch, task_dir, attempt, UNCONFINED)
        how = "a new runner" + (f" resuming session {turn.session_id}" if turn.session_id else "")
        said, _, warned = note.partition("; warning: ")  # the warning at warning level
        return Started(proc, f"{how}; its agent {said}", (f"warning: {warned}",) if warned else ())

    async def interrupt(self, task_dir: Path, record: procs.ProcessRecord, grace: float) -> None:
        """``session/cancel``: the turn ends as cancelled and the session (and its runner)
        stays; a kill of the runner's tree when the runner does not answer."""
        if await cancel_turn(task_dir):
            return
        await procs.kill_tree(record.pid, grace, record.create_time)


def transport_for(name: str, provider: str) -> Transport:
    """The transport ``name`` (:data:`ACP` or :data:`NATIVE`, as :func:`choose` said) of
    ``provider``; :class:`~baton.agents.registry.UnknownProvider` for an unknown native one."""
    if name == ACP:
        return AcpTransport(provider)
    if name == NATIVE:
        return NativeTransport(adapter_for(provider))
    raise ValueError(f"unknown transport {name!r} (known: {ACP}, {NATIVE})")


async def cancel_turn(task_dir: Path) -> bool:
    """Cancel the running turn over ACP (the session stays); False if the runner is unreachable."""
    deadline = time.monotonic() + SOCKET_WAIT
    while True:
        record = control.RunnerRecord.load(task_dir)
        if record is not None:
            try:
                await control.call(record.socket, {"op": "cancel"})
                return True
            except control.ControlError:
                pass
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.05)


async def answer(task_dir: Path, permission_id: str | None, option: str) -> dict[str, Any]:
    """Answer a waiting permission request; raises :class:`control.ControlError` saying why not."""
    record = control.RunnerRecord.load(task_dir)
    if record is None:
        raise control.ControlError("the task has no ACP runner: nothing is waiting for an answer")
    request: dict[str, Any] = {"op": "answer", "option": option}
    if permission_id:
        request["id"] = permission_id
    return await control.call(record.socket, request)


async def stop(task_dir: Path) -> bool:
    """Ask the task's runner to end (its agent with it); False if none answered."""
    record = control.RunnerRecord.load(task_dir)
    if record is None:
        return False
    try:
        await control.call(record.socket, {"op": "stop"}, timeout=2.0)
    except control.ControlError:
        return False
    return True


def choose(profile: Profile, home: Path) -> tuple[str, str]:
    """``(transport, why)`` for a new session of ``profile``."""
    wanted = agents.requested_transport(profile)
    spec = agents.spec_for(profile)
    if wanted == NATIVE:
        return NATIVE, "the profile asks for the native stream"
    if wanted == ACP:
        if spec is None:
            raise ValueError(f"profile {profile.name}: {profile.provider} has no ACP transport")
        return ACP, "the profile asks for ACP"
    if spec is None:
        return NATIVE, f"{profile.provider} has no ACP transport"
    if probe.verified(home, profile):
        return ACP, "ACP adapter installed and seen to work"
    return NATIVE, "ACP not verified for this profile (run `baton doctor`)"


def pending_permissions(evs: list[Event]) -> list[dict[str, Any]]:
    """The permission requests still waiting, from a task's events (latest state per id)."""
    latest: dict[tuple[int, str], dict[str, Any]] = {}
    for e in evs:
        if e.type == EventType.PERMISSION and e.data.get("id"):
            latest[(e.attempt, str(e.data["id"]))] = {**e.data, "attempt": e.attempt}
    if not latest:
        return []
    last_attempt = max(a for a, _ in latest)
    ended = {
        e.attempt
        for e in evs
        if e.type in (EventType.FINAL, EventType.ERROR) and e.attempt == last_attempt
    }
    return [
        d
        for (a, _), d in latest.items()
        if d.get("status") == "pending" and a == last_attempt and a not in ended
    ]


__all__ = [
    "ACP",
    "NATIVE",
    "AcpParser",
    "AcpTransport",
    "ControlError",
    "answer",
    "cancel_turn",
    "choose",
    "pending_permissions",
    "stop",
    "transport_for",
]
