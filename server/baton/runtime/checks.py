"""The project's checks, run by Baton in a task's worktree after the worker says it is done.

A check is an argv list (never a shell string) with a timeout; its exit code decides. It runs
in its own process group, killed whole on timeout, with its output kept to a tail.

A check runs code the agent wrote (a test suite it may have edited), so :func:`confine_check`
puts it in the agent's sandbox (:func:`baton.process.sandbox.confine`, under the same
``sandbox`` setting): the checkout writable, ``/tmp`` private, Baton's state and runtime
folders, the user's config and the credential stores hidden, every process it starts gone
when it ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from baton.agents.base import Launch
from baton.process.sandbox import UNCONFINED, Confinement, SandboxUnavailable, confine
from baton.process.spawn import agent_env

_TAIL = 4000


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    argv: tuple[str, ...]
    timeout: float = 300.0

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Check:
        argv = obj.get("argv")
        if (
            not isinstance(argv, list | tuple)
            or not argv
            or not all(isinstance(a, str) for a in argv)
        ):
            raise ValueError(f"a check needs argv, a non-empty list of strings: {obj!r}")
        timeout = float(obj.get("timeout", 300.0))
        if timeout <= 0:
            raise ValueError(f"a check's timeout must be positive: {obj!r}")
        return cls(str(obj.get("name") or argv[0]), tuple(argv), timeout)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "argv": list(self.argv), "timeout": self.timeout}


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    argv: tuple[str, ...]
    exit_code: int | None  # None: it could not start, or timed out
    seconds: float
    output: str  # the tail of stdout and stderr together
    timed_out: bool = False
    error: str = ""  # why it could not start
    sandbox: str = ""  # how it ran: "sandboxed (bubblewrap 0.8.0, network allowed)", …

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    def label(self) -> str:
        how = (
            "passed"
            if self.passed
            else "timed out"
            if self.timed_out
            else f"could not start ({self.error})"
            if self.error
            else f"failed (exit {self.exit_code})"
        )
        return f"{self.name} {how} in {self.seconds:.1f} s"

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["argv"] = list(self.argv)
        d["passed"] = self.passed
        return d


def confine_check(
    check: Check,
    cwd: str,
    task_dir: Path,
    *,
    mode: str = "auto",
    network: bool = True,
    hide: Sequence[str] = (),
) -> tuple[Confinement, dict[str, str]]:
    """How ``check`` runs in ``cwd`` (the agent's checkout) under the ``sandbox`` setting
    ``mode``, and its environment: the agent's policy for a launch of no agent CLI (so every
    CLI's state folder is hidden too). Raises ``SandboxUnavailable`` as
    :func:`~baton.process.sandbox.confine` does (``require`` and no sandbox)."""
    launch = Launch(argv=list(check.argv), cwd=cwd)
    env = agent_env(launch)
    how = confine(launch, task_dir, env, mode=mode, network=network, hide=hide)
    return how, {**env, **how.env}


def run_sandboxed(
    check: Check,
    cwd: str,
    task_dir: Path,
    *,
    mode: str = "auto",
    network: bool = True,
    hide: Sequence[str] = (),
) -> CheckResult:
    """:func:`run_check` inside the agent's sandbox (:func:`confine_check`); a check that
    ``sandbox = "require"`` does not let start fails, saying why."""
    try:
        how, env = confine_check(check, cwd, task_dir, mode=mode, network=network, hide=hide)
    except SandboxUnavailable as exc:
        why = str(exc).replace("the agent was not started", "the check was not started")
        return CheckResult(check.name, check.argv, None, 0.0, "", error=why, sandbox="refused")
    missing = _missing(check.argv[0], cwd, env)
    if how.sandboxed and missing:  # else bubblewrap says it, as exit 1
        return CheckResult(check.name, check.argv, None, 0.0, "", error=missing, sandbox=how.note)
    return run_check(check, cwd, env, how)


def _missing(argv0: str, cwd: str, env: Mapping[str, str]) -> str:
    """Why ``argv0`` cannot be started ("" when it can), as ``Popen`` would say it."""
    path = (
        os.path.join(cwd, argv0) if os.sep in argv0 else shutil.which(argv0, path=env.get("PATH"))
    )
    if path is None or not os.path.isfile(path):
        return f"[Errno 2] No such file or directory: {argv0!r}"
    if not os.access(path, os.X_OK):
        return f"[Errno 13] Permission denied: {argv0!r}"
    return ""


def run_check(
    check: Check,
    cwd: str,
    env: Mapping[str, str] | None = None,
    confinement: Confinement = UNCONFINED,
) -> CheckResult:
    """Run one check to the end or its timeout (synchronous: call it from a thread), as
    ``confinement`` says (as it is, by default)."""
    start = time.monotonic()
    note = confinement.note
    try:
        proc = subprocess.Popen(
            confinement.wrap(check.argv),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        return CheckResult(
            check.name, check.argv, None, time.monotonic() - start, "", error=str(exc), sandbox=note
        )
    try:
        out, _ = proc.communicate(timeout=check.timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        timed_out = True
    text = out.decode("utf-8", errors="replace")[-_TAIL:]
    code = None if timed_out else proc.returncode
    seconds = time.monotonic() - start
    return CheckResult(check.name, check.argv, code, seconds, text, timed_out, sandbox=note)


def summary(results: Sequence[CheckResult]) -> str:
    """ "checks passed (tests 1.2 s, lint 0.3 s)" or "checks failed: tests failed (exit 1) …"."""
    if not results:
        return "no checks configured"
    if all(r.passed for r in results):
        return "checks passed (" + ", ".join(f"{r.name} {r.seconds:.1f} s" for r in results) + ")"
    failed = [r for r in results if not r.passed]
    return "checks failed: " + "; ".join(r.label() for r in failed)


def repair_prompt(results: Sequence[CheckResult], round_no: int, rounds: int) -> str:
    failed = [r for r in results if not r.passed]
    parts = [
        f"The project's checks failed after your change (repair round {round_no} of {rounds}).",
        "Fix the code so that they pass; do not weaken or skip the checks.",
    ]
    for r in failed:
        parts += ["", f"$ {' '.join(r.argv)}  → {r.label()}", "```", r.output.rstrip(), "```"]
    return "\n".join(parts) + "\n"
