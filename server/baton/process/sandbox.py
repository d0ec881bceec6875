"""The agent's sandbox: what an agent process may see and change, as one policy, enforced by
bubblewrap on Linux (and, generated from the same policy, a ``sandbox-exec`` profile on macOS).

A :class:`Policy` is a list of :class:`Mount` rules on paths — ``write`` (read-write),
``read`` (read-only, shown even inside a hidden folder), ``hide`` (an empty folder or file in
its place) and ``protect`` (read-only inside a writable folder) — over a file system that is
otherwise read-only, plus whether the network is reachable. The more specific rule wins: the
rules are applied shallowest path first, and on one path ``protect`` beats ``hide`` beats
``write`` beats ``read``. So the task's checkout (under the hidden state folder) is writable,
the IDE lock folder inside a writable config folder is hidden, and the checkout's ``.git``
file stays as Baton made it.

:func:`policy_for` builds the policy of one launch (:mod:`baton.process.sandbox_paths` says
which paths and why): its checkout and its CLI's own state folders writable, ``/tmp`` private,
Baton's state folder, runtime folder (discovery files, tokens, sockets), the other accounts'
state folders, IDE lock files and the usual credential stores hidden, the git metadata of the
checkout as :func:`~baton.process.sandbox_paths.git_paths` decides.

:func:`bwrap_argv` turns it into a bubblewrap command line: a PID namespace with a fresh
``/proc`` (the agent sees no process of the user's, nor their ``/proc/<pid>/root``),
``--die-with-parent`` (the sandbox dies with the wrapper, which dies with nothing left behind
— see :mod:`baton.process.reaper`), a network namespace of its own when the profile's
``network`` is ``"none"``. bubblewrap runs *under* the wrapper (``wrap → bwrap → agent``): the
wrapper keeps its claim, pid file and exit record in the task's folder outside the sandbox,
and the agent's exit code comes back through bubblewrap (a signal ``n`` as ``128 + n``).
bubblewrap itself is started with SIGTERM, SIGINT and SIGHUP ignored (by Baton's wrapper,
``--ignore-stop``; by ``env --ignore-signal`` for a check) and the agent with them restored
(``env --default-signal``), so a cancel's SIGTERM to the
wrapper's process group reaches the agent, which ends in its own time, instead of killing
bubblewrap (which would SIGKILL the sandbox at once).

:func:`confine` decides per launch from the ``sandbox`` setting (``auto`` | ``require`` |
``off``) and what this machine has (:func:`status`): a :class:`Confinement` that wraps the
agent's argv and says, for the task's log, how it runs. ``require`` without a working sandbox
raises :class:`SandboxUnavailable` (nothing starts).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.agents.base import Launch
from baton.agents.mcp_files import ServerFiles
from baton.errors import Unavailable
from baton.process.sandbox_paths import inside, plan, private_tmp

MODES = ("auto", "require", "off")
WRITE, READ, HIDE, PROTECT = "write", "read", "hide", "protect"
#: On one path, the later access wins.
_RANK = {READ: 0, WRITE: 1, HIDE: 2, PROTECT: 3}
#: Signals a cancel sends, which bubblewrap must not die of (see the module's docstring).
_STOP_SIGNALS = "TERM,INT,HUP"
#: The agent's temporary folder inside the sandbox (a private tmpfs on Linux).
TMP = "/tmp"


class SandboxUnavailable(Unavailable, OSError):
    """``sandbox = "require"`` and no sandbox can run here: the agent is not started."""


@dataclass(frozen=True, slots=True, order=True)
class Mount:
    """One rule of a policy: ``access`` (write | read | hide | protect) on ``path``."""

    path: str
    access: str
    is_dir: bool = True


@dataclass(frozen=True, slots=True)
class Policy:
    """What one agent process may see and change (see the module's docstring)."""

    cwd: str
    mounts: tuple[Mount, ...] = ()
    network: bool = True
    # What it was asked to show and does not (an MCP server's file it hides): "warning: …".
    warnings: tuple[str, ...] = ()

    @classmethod
    def of(
        cls, cwd: str, mounts: Iterable[Mount], network: bool = True, warnings: Iterable[str] = ()
    ) -> Policy:
        """A policy whose rules are put in the order they apply: one rule per path (the
        strongest access), shallowest path first."""
        best: dict[str, Mount] = {}
        for mount in mounts:
            if mount.access not in _RANK:
                raise ValueError(f"unknown access {mount.access!r}")
            path = os.path.normpath(mount.path)
            if not os.path.isabs(path) or path == "/":
                continue  # the root is read-only already; a relative path means nothing here
            mount = Mount(path, mount.access, mount.is_dir)
            held = best.get(path)
            if held is None or _RANK[mount.access] >= _RANK[held.access]:
                best[path] = mount
        # A read rule only matters inside a hidden or writable folder: all else is read-only.
        opened = [m.path for m in best.values() if m.access in (HIDE, WRITE)]
        kept = [
            m
            for m in best.values()
            if m.access != READ or any(_within(m.path, o) and m.path != o for o in opened)
        ]
        ordered = sorted(kept, key=lambda m: (_depth(m.path), _RANK[m.access], m.path))
        return cls(cwd, tuple(ordered), network, tuple(warnings))

    def paths(self, access: str) -> list[str]:
        return [m.path for m in self.mounts if m.access == access]


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _depth(path: str) -> int:
    return len([part for part in path.split("/") if part])


def bwrap_argv(policy: Policy, bwrap: str = "bwrap") -> list[str]:
    """The bubblewrap command line (up to and including ``--``) that runs a command under
    ``policy``; the command's argv follows it."""
    argv = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-cgroup-try"]
    if not policy.network:
        argv.append("--unshare-net")
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for m in policy.mounts:
        if m.access == WRITE:
            argv += ["--bind", m.path, m.path]
        elif m.access in (READ, PROTECT):
            argv += ["--ro-bind", m.path, m.path]
        elif m.is_dir:
            argv += ["--tmpfs", m.path]
        else:
            argv += ["--ro-bind", "/dev/null", m.path]
    argv += ["--chdir", policy.cwd, "--"]
    return argv


def _sb(path: str) -> str:
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def seatbelt_profile(policy: Policy, tmp: str) -> str:
    """The macOS ``sandbox-exec`` profile (SBPL) of ``policy``, with ``tmp`` as the agent's
    private temporary folder (macOS has no mount namespace: ``/tmp`` cannot be replaced).

    Everything may be read and nothing written, then the policy's rules follow in the order
    they apply (in SBPL the last matching rule wins): ``hide`` denies reading and writing,
    ``read`` allows reading, ``write`` both, ``protect`` denies writing. Signals reach only
    the agent's own sandbox; ``network = "none"`` denies all network use. There is no PID
    namespace: other processes stay visible.
    """
    lines = [
        "(version 1)",
        "(allow default)",
        '(deny file-write* (subpath "/"))',
        "(allow file-write*",
        '  (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty")',
        f'  (regex #"^/dev/fd/") (subpath {_sb(tmp)}))',
        "(deny signal)",
        "(allow signal (target same-sandbox))",
    ]
    for m in policy.mounts:
        target = f"({'subpath' if m.is_dir else 'literal'} {_sb(m.path)})"
        rule = {
            HIDE: f"(deny file-read* file-write* {target})",
            READ: f"(allow file-read* {target})",
            WRITE: f"(allow file-read* file-write* {target})",
            PROTECT: f"(deny file-write* {target})",
        }[m.access]
        lines.append(rule)
    if not policy.network:
        lines.append("(deny network*)")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class Status:
    """Which sandbox this machine can run (``baton doctor`` shows it)."""

    kind: str  # bubblewrap | sandbox-exec | none
    works: bool  # it ran (bubblewrap: a trial sandbox started)
    default: bool  # ``sandbox = "auto"`` uses it
    binary: str | None = None
    version: str | None = None
    why: str = ""  # why it does not work, or is not the default
    graceful: bool = False  # a cancel's SIGTERM reaches the agent (env --ignore-signal works)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "works": self.works,
            "default": self.default,
            "binary": self.binary,
            "version": self.version,
            "why": self.why,
            "graceful_stop": self.graceful,
        }


def _run(argv: list[str]) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None


def status() -> Status:
    """What sandbox this machine has (bubblewrap is tried once per binary and process)."""
    if sys.platform == "darwin":
        exe = shutil.which("sandbox-exec")
        if exe is None:
            return Status("none", False, False, why="sandbox-exec was not found")
        return Status(
            "sandbox-exec", True, False, exe,
            why='the macOS profile is not yet verified on a Mac: sandbox = "require" uses it',
        )  # fmt: skip
    if not sys.platform.startswith("linux"):
        return Status("none", False, False, why=f"no sandbox is known for {sys.platform}")
    exe = shutil.which("bwrap")
    if exe is None:
        why = "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
        return Status("bubblewrap", False, False, why=why)
    return _probe(exe, shutil.which("env"))


@functools.cache
def _probe(exe: str, env: str | None) -> Status:
    found = _run([exe, "--version"])
    version = found.stdout.split()[-1] if found and found.stdout.split() else None
    trial = _run([*bwrap_argv(Policy(cwd="/"), exe), "true"])
    if trial is None or trial.returncode != 0:
        said = (trial.stderr.strip() if trial else "") or "it did not start"
        why = f"bubblewrap cannot create a sandbox here: {said[-300:]}"
        return Status("bubblewrap", False, False, exe, version, why)
    probe = _run([env, f"--ignore-signal={_STOP_SIGNALS}", "true"]) if env else None
    graceful = probe is not None and probe.returncode == 0
    return Status("bubblewrap", True, True, exe, version, graceful=graceful)


@dataclass(frozen=True, slots=True)
class Confinement:
    """How one agent process is started: inside a sandbox (``prefix`` non-empty) or not."""

    note: str  # for the task's log: "sandboxed (bubblewrap, network allowed)"
    prefix: tuple[str, ...] = ()
    suffix: tuple[str, ...] = ()  # between the sandbox and the agent (signals restored)
    env: dict[str, str] = field(default_factory=dict)  # set in the agent's environment
    policy: Policy | None = None
    # For the task's log at warning level: MCP servers that will not start or will miss files.
    warnings: tuple[str, ...] = ()
    #: The stop signals are ignored by the sandbox (:data:`_STOP_SIGNALS`, see the module's
    #: docstring): ``ignoring`` starts it so, where Baton's wrapper does not.
    ignoring: tuple[str, ...] = ()

    @property
    def sandboxed(self) -> bool:
        return bool(self.prefix)

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` as it is started: inside the sandbox, or as it is."""
        return [*self.ignoring, *self.bare(argv)] if self.prefix else list(argv)

    def bare(self, argv: Sequence[str]) -> list[str]:
        """``argv`` as Baton's wrapper starts it (the stop signals ignored by the wrapper
        itself when :attr:`ignoring`: one process fewer on the way to the agent)."""
        return [*self.prefix, *self.suffix, *argv] if self.prefix else list(argv)


#: A launch started as it is (Baton's own ACP runner, whose agent it sandboxes itself).
UNCONFINED = Confinement("")


def confine(
    launch: Launch,
    task_dir: Path,
    env: Mapping[str, str],
    *,
    provider: str = "",
    mode: str = "auto",
    network: bool = True,
    hide: Sequence[str] = (),
    protect: Sequence[str] = (),
    mcp: Sequence[ServerFiles] = (),
) -> Confinement:
    """How ``launch`` (whose environment is ``env``) runs under the ``sandbox`` setting
    ``mode``, its CLI starting the MCP servers ``mcp`` (their files are shown in the sandbox,
    see :mod:`baton.process.sandbox_mcp`); raises :class:`SandboxUnavailable` when ``mode``
    is ``require`` and no sandbox works here, :class:`ValueError` for an unknown mode."""
    if mode not in MODES:
        raise ValueError(f"unknown sandbox setting {mode!r}; one of {', '.join(MODES)}")
    problems = tuple(p for server in mcp for p in server.problems)
    if mode == "off":
        return Confinement('unsandboxed (sandbox = "off")', warnings=problems)
    found = status()
    if not (found.works and (found.default or mode == "require")):
        if mode == "require":
            raise SandboxUnavailable(
                f'sandbox = "require" but no sandbox can run here: {found.why}; '
                "the agent was not started"
            )
        return Confinement(f'UNSANDBOXED: {found.why} (sandbox = "auto")', warnings=problems)
    policy = policy_for(
        launch, task_dir, env, provider=provider, network=network, hide=hide, protect=protect,
        mcp=mcp,
    )  # fmt: skip
    problems += policy.warnings
    reach = "network allowed" if network else "no network"
    own_tmp = _writable_tmp(policy, env)
    if found.kind == "sandbox-exec":
        tmp = own_tmp or private_tmp(task_dir)
        return Confinement(
            f"sandboxed (sandbox-exec, {reach})",
            prefix=(found.binary or "sandbox-exec", "-p", seatbelt_profile(policy, tmp)),
            env={"TMPDIR": tmp},
            policy=policy,
            warnings=problems,
        )
    prefix = bwrap_argv(policy, found.binary or "bwrap")
    suffix: tuple[str, ...] = ()
    env_bin = shutil.which("env") if found.graceful else None  # as probed
    ignoring: tuple[str, ...] = ()
    if env_bin:
        ignoring = (env_bin, f"--ignore-signal={_STOP_SIGNALS}")
        suffix = (env_bin, f"--default-signal={_STOP_SIGNALS}")
    version = f" {found.version}" if found.version else ""
    return Confinement(
        f"sandboxed (bubblewrap{version}, {reach})",
        prefix=tuple(prefix),
        suffix=suffix,
        env={"TMPDIR": own_tmp or TMP},
        policy=policy,
        warnings=problems,
        ignoring=ignoring,
    )


def _writable_tmp(policy: Policy, env: Mapping[str, str]) -> str:
    """The agent's own ``$TMPDIR`` when it can write there in the sandbox, else ""."""
    tmp = env.get("TMPDIR", "")
    if not tmp:
        return ""
    found = os.path.realpath(tmp)
    return found if any(inside(found, p) for p in policy.paths(WRITE)) else ""


def policy_for(
    launch: Launch,
    task_dir: Path,
    env: Mapping[str, str],
    *,
    provider: str = "",
    network: bool = True,
    hide: Sequence[str] = (),
    protect: Sequence[str] = (),
    mcp: Sequence[ServerFiles] = (),
) -> Policy:
    """The policy of one launch (see :mod:`baton.process.sandbox_paths` for the paths);
    ``protect``: more paths kept read-only though inside writable ones (a read-only task's
    checkout); ``mcp``: the MCP servers its CLI starts, whose files it shows.

    Folders it must write that do not exist yet (a CLI's state folder) are created (0700).
    """
    found = plan(
        cwd=launch.cwd or str(task_dir),
        task_dir=str(task_dir),
        env=env,
        provider=provider,
        argv0=launch.argv[0] if launch.argv else "",
        named=launch.argv[1:],
        # Baton's own Python (the fake agent, the ACP runner's helpers run on it) wherever
        # it is installed, under the temporary folder included.
        readable=(*launch.readable, *_baton_itself()),
        writable=launch.writable,
        hide=hide,
        mcp=mcp,
    )
    mounts = [Mount(p, WRITE, os.path.isdir(p)) for p in found.writable]
    mounts += [Mount(p, READ, os.path.isdir(p)) for p in found.readable]
    mounts += [Mount(p, HIDE, os.path.isdir(p)) for p in found.hidden]
    protected = [*found.protected, *(os.path.realpath(p) for p in protect)]
    mounts += [Mount(p, PROTECT, os.path.isdir(p)) for p in protected]
    return Policy.of(found.cwd, mounts, network, found.warnings)


@functools.cache
def _baton_itself() -> tuple[str, ...]:
    """Baton's Python and Baton's own code (an editable install's source folder too): where
    this process runs from, found once."""
    package = str(Path(__file__).resolve().parents[2])  # the folder holding ``baton``
    return tuple(dict.fromkeys((sys.prefix, sys.base_prefix, package)))


def report(mode: str) -> dict[str, Any]:
    """The sandbox as ``baton doctor`` and the editors report it under the ``sandbox``
    setting ``mode``: :func:`status` plus ``setting``, ``agents`` (sandboxed | unsandboxed |
    refused), ``ok`` (not refused), ``summary`` (:func:`report_text`) and ``advice`` (what to
    do about it, "" when agents run sandboxed)."""
    found = status()
    if mode == "off":
        agents = "unsandboxed"
    elif found.works and (found.default or mode == "require"):
        agents = "sandboxed"
    else:
        agents = "refused" if mode == "require" else "unsandboxed"
    out = {**found.to_json(), "setting": mode, "agents": agents, "ok": agents != "refused"}
    return {**out, "summary": report_text(out), "advice": _advice(found, mode, agents)}


def _advice(found: Status, mode: str, agents: str) -> str:
    """What the user can do when agents do not run sandboxed."""
    if agents == "sandboxed":
        return ""
    if mode == "off":
        return 'Remove sandbox = "off" from your user config (or set "auto") to sandbox agents'
    if found.kind == "sandbox-exec" and found.works:
        fix = 'Set sandbox = "require" in your user config to use the macOS sandbox-exec profile'
    elif found.kind == "bubblewrap" and found.binary is None:
        fix = "Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"
    elif found.kind == "bubblewrap":
        fix = (
            "Let bubblewrap create its sandbox here (unprivileged user namespaces: "
            "sysctl kernel.unprivileged_userns_clone=1, or an AppArmor profile for bwrap)"
        )
    else:
        fix = "No sandbox is known for this system"
    if agents == "refused":
        return f'{fix}; or set sandbox = "auto" in your user config to run agents unsandboxed'
    return f'{fix}; or set sandbox = "require" in your user config to refuse unsandboxed agents'


def report_text(found: Mapping[str, Any]) -> str:
    """One plain line for a terminal from :func:`report`'s answer."""
    setting = f'sandbox = "{found["setting"]}"'
    if found["setting"] == "off":
        return f"Sandbox: off ({setting}): agents run unsandboxed, with all you can reach."
    if found["agents"] == "sandboxed":
        version = f" {found['version']}" if found.get("version") else ""
        where = f" ({found['binary']})" if found.get("binary") else ""
        return f"Sandbox: {found['kind']}{version}{where}: agents run sandboxed ({setting})."
    if found["agents"] == "refused":
        return f"Sandbox: NONE — {found['why']}: agents are REFUSED ({setting})."
    return (
        f"Sandbox: NONE — {found['why']}: agents run UNSANDBOXED, with all you can reach "
        f'({setting}; "require" refuses to start them instead).'
    )
