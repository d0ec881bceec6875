"""Where an attempt runs: here (``runner = "local"``), or on a node of a Ray cluster.

A profile with ``runner = "ray"`` keeps everything of a local attempt but the place its
agent runs. :class:`RayTransport` wraps the profile's native transport: its ``start``
spawns, as any agent is spawned (detached, the wrapper, its claim and exit record), the
relay (:mod:`baton.process.ray_relay`), which has the agent run on a node that advertises
the profile's ``ray_resources`` and prints that agent's stdout as its own; its ``parser`` is
the adapter's; its ``interrupt`` ends the relay's tree, whose SIGTERM stops the remote one.
So the broker follows, adopts, watches and cancels a remote attempt as a local one, and
never imports Ray (it needs only the extra to be installed: ``baton-lsp[ray]``).

The attempt's spec (``attempt-<n>.remote.json``: the turn, the profile without its
secrets, the cluster, the resources) and the relay's state (``attempt-<n>.remote``: the
actor, the node, ``lost`` when the node went away, ``error`` when none could take it) sit
beside the attempt's output. A profile's keyring secrets stay on this machine — a node
uses its own login — unless the profile says ``ray_ship_secrets = true``; then they reach
the relay through its environment and the node through Ray (in clear, unless the cluster
uses TLS).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

from baton.agents.base import Launch, Parser, Turn
from baton.config.profiles import Profile
from baton.core.masking import MASK_ENV
from baton.errors import Unavailable
from baton.process.sandbox import Confinement
from baton.process.spawn import ProcessRecord, kill_tree, spawn
from baton.process.transport import NATIVE, Started, Transport

LOCAL = "local"
RAY = "ray"
#: A profile's ``runner`` values.
RUNNERS = (LOCAL, RAY)
#: Set (to 1) by a test cluster on one host: Ray stays on 127.0.0.1.
LOOPBACK_ENV = "BATON_RAY_LOOPBACK"


class RunnerUnavailable(Unavailable, ValueError):
    """The profile's runner cannot be used here (the extra is missing, no address); a
    ``ValueError`` too, which the runtime takes as an attempt that could not start."""


def ray_installed() -> bool:
    """Whether the ``ray`` package is importable (without importing it)."""
    return importlib.util.find_spec("ray") is not None


def namespace_for(home: Path) -> str:
    """The Ray namespace of a broker store: actors' names are unique in it, and a broker
    started again on the same store finds its attempts' actors there."""
    db = os.path.realpath(home / "baton.db")
    return "baton-" + hashlib.sha256(db.encode()).hexdigest()[:12]


def spec_path(task_dir: Path, attempt: int) -> Path:
    return task_dir / f"attempt-{attempt}.remote.json"


def state_path(task_dir: Path, attempt: int) -> Path:
    return task_dir / f"attempt-{attempt}.remote"


def read_state(task_dir: Path, attempt: int) -> dict[str, Any]:
    """What the relay of attempt ``attempt`` wrote down; ``{}`` for a local attempt."""
    try:
        data = json.loads(state_path(task_dir, attempt).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def runs_on_ray(profile: Profile) -> bool:
    return profile.runner == RAY


def placed(transport: Transport, profile: Profile, home: Path) -> Transport:
    """``transport``, or the Ray runner around it when ``profile`` runs on a cluster;
    raises :class:`RunnerUnavailable` saying what is missing."""
    if not runs_on_ray(profile):
        return transport
    if not ray_installed():
        raise RunnerUnavailable(
            f'profile {profile.name} has runner = "ray", but Ray is not installed here:'
            " pip install 'baton-lsp[ray]'"
        )
    if not profile.ray_address:
        raise RunnerUnavailable(f'profile {profile.name} has runner = "ray" but no ray_address')
    if transport.name != NATIVE:
        raise RunnerUnavailable(
            f"profile {profile.name}: the Ray runner runs the native stream, not {transport.name}"
            ' (set options.transport = "native")'
        )
    return RayTransport(transport, home)


def _secret_names(env: dict[str, str]) -> list[str]:
    return [n for n in env.get(MASK_ENV, "").split(",") if n]


def remote_profile(profile: Profile) -> tuple[dict[str, Any], dict[str, str]]:
    """The profile as the node gets it, and the secret variables the relay carries: none
    unless the profile ships them (their values never go into the spec file)."""
    env = dict(profile.env)
    secret = {n: env.pop(n) for n in _secret_names(env) if n in env}
    if not secret:
        env.pop(MASK_ENV, None)
    elif not profile.ray_ship_secrets:
        env.pop(MASK_ENV, None)
        secret = {}
    fields = dataclasses.asdict(profile)
    fields["env"] = env
    return fields, secret


class RayTransport:
    """The Ray runner around a native transport (see the module's docstring)."""

    name = NATIVE  # what the agent speaks; a later broker follows it as any native attempt

    def __init__(self, inner: Transport, home: Path) -> None:
        self.inner = inner
        self.provider = inner.provider
        self.home = home

    def parser(self) -> Parser:
        return self.inner.parser()

    async def start(self, turn: Turn, profile: Profile, attempt: int) -> Started:
        if not turn.task_dir:
            raise ValueError("a turn needs its task's folder to start an attempt")
        task_dir = Path(turn.task_dir)
        checkout = await asyncio.to_thread(_toplevel, turn.cwd)
        fields = dataclasses.asdict(turn)
        fields.pop("task_dir")
        fields.pop("cwd")
        fields["subdir"] = os.path.relpath(turn.cwd, checkout)
        fields["subdir"] = "" if fields["subdir"] == "." else fields["subdir"]
        remote, secret = remote_profile(profile)
        spec = {
            "task_id": turn.task_id,
            "attempt": attempt,
            "namespace": namespace_for(self.home),
            "address": profile.ray_address,
            "resources": dict(profile.ray_resources),
            "checkout": checkout,
            "state": str(state_path(task_dir, attempt)),
            "turn": fields,
            "profile": remote,
            "ship_env": sorted(secret),
            "loopback": os.environ.get(LOOPBACK_ENV) == "1",
        }
        task_dir.mkdir(parents=True, exist_ok=True)
        path = spec_path(task_dir, attempt)
        path.write_text(json.dumps(spec))
        state_path(task_dir, attempt).unlink(missing_ok=True)
        env = dict(secret)
        if secret:
            env[MASK_ENV] = ",".join(sorted(secret))
        env["RAY_USAGE_STATS_ENABLED"] = "0"
        relay = Launch(
            argv=[sys.executable, "-P", "-m", "baton.process.ray_relay", str(path)],
            env=env,
            cwd=str(task_dir),
        )
        wants = ", ".join(f"{k}={v:g}" for k, v in profile.ray_resources.items()) or "any node"
        note = f"runs on the Ray cluster at {profile.ray_address} ({wants}); sandbox set there"
        record = await asyncio.to_thread(spawn, relay, task_dir, attempt, Confinement(note))
        return Started(record, note)

    async def interrupt(self, task_dir: Path, record: ProcessRecord, grace: float) -> None:
        """End the relay's tree; its SIGTERM stops the agent's tree on the node first."""
        await kill_tree(record.pid, max(grace, 2.0), record.create_time)


def _toplevel(cwd: str) -> str:
    import subprocess

    return subprocess.run(
        ["git", "-C", cwd, "rev-parse", "--show-toplevel"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
