"""Is an agent's ACP command really working? An ``initialize`` handshake, and its record.

``baton doctor`` probes each profile's ACP command (start it, ``initialize``, stop it) and
records the outcome in ``acp-probes.json`` in Baton's state folder, keyed by the command's
real path and modification time (a reinstall invalidates it). ``auto`` transport chooses ACP
only for a command with a good record: installed *and* seen to work.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

from baton import __version__
from baton.acp import agents
from baton.agents.base import AgentNotFound, Turn
from baton.config.profiles import Profile

PROBES = "acp-probes.json"
TIMEOUT = 20.0


@dataclass(slots=True)
class ProbeResult:
    ok: bool
    command: str = ""
    agent: str = ""  # agentInfo name and version, when the agent gave them
    load_session: bool = False
    seconds: float = 0.0
    error: str = ""


def _key(binary: str) -> str:
    real = os.path.realpath(binary)
    try:
        mtime = os.stat(real).st_mtime
    except OSError:
        mtime = 0.0
    return f"{real}@{mtime:.0f}"


def _load(home: Path) -> dict[str, Any]:
    try:
        data = json.loads((home / PROBES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record(home: Path, binary: str, result: ProbeResult) -> None:
    """Remember ``result`` for ``binary`` in ``home``."""
    data = _load(home)
    data[_key(binary)] = {**asdict(result), "checked_at": time.time()}
    home.mkdir(parents=True, exist_ok=True)
    tmp = home / f"{PROBES}.tmp{os.getpid()}"
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, home / PROBES)


def verified(home: Path, profile: Profile) -> bool:
    """Whether this profile's ACP command was probed successfully (and not changed since)."""
    spec = agents.spec_for(profile)
    if spec is None:
        return False
    try:  # only the executable: building the whole command writes config files
        binary = agents.find_binary(profile, spec)
    except AgentNotFound:
        return False
    entry = _load(home).get(_key(binary))
    return isinstance(entry, dict) and bool(entry.get("ok"))


def _command(profile: Profile, folder: str) -> tuple[list[str], dict[str, str]]:
    turn = Turn(task_id="probe", prompt="", cwd=folder, task_dir=folder)
    return agents.command(profile, turn)


async def probe(profile: Profile, folder: Path, timeout: float = TIMEOUT) -> ProbeResult:
    """Start the profile's ACP command in ``folder``, ``initialize`` it, stop it."""
    import acp
    from acp.schema import ClientCapabilities, Implementation

    try:
        argv, env = _command(profile, str(folder))
    except AgentNotFound as exc:
        return ProbeResult(False, error=str(exc))
    result = ProbeResult(False, command=argv[0])
    started = time.monotonic()
    spawned: asyncio.subprocess.Process | None = None
    spec = agents.spec_for(profile)
    hidden = set(spec.unset_env) if spec is not None else set()
    full_env = {k: v for k, v in os.environ.items() if k not in hidden} | env
    err = open(folder / "acp-probe.err", "wb")  # noqa: ASYNC230, SIM115
    descendants: list[psutil.Process] = []
    try:
        async with (
            acp.spawn_agent_process(
                _NoClient(),  # type: ignore[arg-type]
                argv[0],
                *argv[1:],
                env=full_env,
                cwd=str(folder),
                transport_kwargs={"stderr": err},
            ) as (conn, proc)
        ):
            spawned = proc
            init = await asyncio.wait_for(
                conn.initialize(
                    protocol_version=acp.PROTOCOL_VERSION,
                    client_capabilities=ClientCapabilities(),
                    client_info=Implementation(name="baton-doctor", version=__version__),
                ),
                timeout,
            )
            info = init.agent_info
            result.agent = f"{info.name} {info.version}" if info is not None else ""
            caps = init.agent_capabilities
            result.load_session = bool(caps and caps.load_session)
            result.ok = True
            with contextlib.suppress(psutil.Error):  # what to end, should the launcher leave it
                descendants = psutil.Process(proc.pid).children(recursive=True)
    except TimeoutError:
        result.error = f"no answer to initialize within {timeout:g} s"
    except Exception as exc:
        result.error = str(exc) or type(exc).__name__
    finally:
        # The library leaves the pipe transport to the garbage collector, which would close
        # it after the event loop is gone (a noisy warning): close it while the loop runs.
        transport = getattr(spawned, "_transport", None)
        if transport is not None:
            transport.close()
        err.close()
        result.seconds = round(time.monotonic() - started, 2)
        await _stop(descendants)
    if not result.ok:
        with contextlib.suppress(OSError):
            tail = (folder / "acp-probe.err").read_text(errors="replace").strip()[-300:]
            if tail:
                result.error += f" ({tail})"
    return result


async def _stop(procs: list[psutil.Process]) -> None:
    """End what the probe started and its launcher left behind (codex-acp's native binary)."""
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = await asyncio.to_thread(psutil.wait_procs, procs, 3.0)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()


class _NoClient:
    """A client that serves nothing: the probe only says hello."""

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        return None
