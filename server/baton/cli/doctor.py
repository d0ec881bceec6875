"""``baton doctor``: which agent CLIs are installed, and whether each profile can run.

The profiles are the resolved ones (the agent CLIs found on PATH, the user's and the project's
config), the same routing reads; the report names the default worker and why, and is ``ok``
only when that default is a real agent CLI that can run. Checks only what can be checked
offline: each known agent CLI on PATH and its version
(``--version``, 5 s at most), and for each profile its binary, its account folder (exists?)
and whether a login or API key is there, plus each CLI's known misconfigurations
(:mod:`baton.agents.preflight`). Everything missing comes with what to do about it.

Both transports are reported per profile: the native stream (the checks above) and ACP —
whether the agent's ACP command is installed and, when a state folder is given, whether it
answers an ``initialize`` handshake (recorded there: ``auto`` transport picks ACP only for a
command seen to work), plus bubblewrap for Codex, whose ACP adapter does not bundle it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from baton.acp import agents as acp_agents
from baton.acp import probe as acp_probe
from baton.agents import preflight
from baton.agents.base import AgentNotFound
from baton.config.logins import AGENTS, AgentInfo, choose_default, find_login
from baton.config.profiles import DISCOVERABLE, Profile

VERSION_TIMEOUT = 5.0


@dataclass(slots=True)
class CliCheck:
    """One known agent CLI as found on PATH."""

    provider: str
    executable: str
    path: str | None = None
    version: str | None = None
    error: str | None = None
    advice: str | None = None

    @property
    def ok(self) -> bool:
        return self.path is not None and self.error is None


@dataclass(slots=True)
class AcpCheck:
    """A profile's ACP transport: its command, and whether it answered a handshake."""

    command: str | None = None
    agent: str = ""  # name and version the agent gave in ``initialize``
    probed: bool = False
    ok: bool | None = None  # None: not probed
    seconds: float | None = None
    notes: list[str] = field(default_factory=list)  # each says what to do


@dataclass(slots=True)
class ProfileCheck:
    """One profile: can its binary run, and is its account folder usable?"""

    name: str
    provider: str
    binary: str | None = None
    version: str | None = None
    folder: str | None = None
    folder_exists: bool | None = None
    logged_in: bool | None = None  # None: cannot tell offline, or not applicable
    login: str = ""  # how it is logged in ("API key in ANTHROPIC_API_KEY", "auth.json")
    problems: list[str] = field(default_factory=list)  # each says what to do
    notes: list[str] = field(default_factory=list)  # what Baton works around for this CLI
    transport: str = "native"  # what a new task of this profile uses ("acp" or "native")
    acp: AcpCheck | None = None  # None: the provider has no ACP transport

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(slots=True)
class Report:
    path: list[str]
    clis: list[CliCheck]
    profiles: list[ProfileCheck]
    default: str = ""  # the default worker ("" = none can run)
    default_reason: str = ""

    @property
    def all_ok(self) -> bool:
        return all(p.ok for p in self.profiles)

    @property
    def ok(self) -> bool:
        """A real agent CLI is the default and can run (the fake agent never counts)."""
        chosen = next((p for p in self.profiles if p.name == self.default), None)
        return chosen is not None and chosen.ok and chosen.provider not in ("fake", "command")

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "all_ok": self.all_ok,
            "default": self.default or None,
            "default_reason": self.default_reason,
            "path": self.path,
            "clis": [{**asdict(c), "ok": c.ok} for c in self.clis],
            "profiles": [{**asdict(p), "ok": p.ok} for p in self.profiles],
        }


def version_of(binary: str, env: Mapping[str, str] | None = None) -> tuple[str | None, str | None]:
    """``(version, None)`` from ``binary --version``, or ``(None, why it failed)``.

    The CLI runs in its own process group, killed whole if it does not answer in time (a
    launcher's children would otherwise keep the pipes open).
    """
    try:
        proc = subprocess.Popen(
            [binary, "--version"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    except OSError as exc:
        return None, f"`{binary} --version` could not start: {exc.strerror or exc}"
    try:
        out, err = proc.communicate(timeout=VERSION_TIMEOUT)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None, f"`{binary} --version` did not answer within {VERSION_TIMEOUT:g} s"
    lines = [ln.strip() for ln in (out or err).splitlines() if ln.strip()]
    if proc.returncode != 0:
        tail = lines[-1] if lines else "no output"
        return None, f"`{binary} --version` failed with exit code {proc.returncode}: {tail}"
    return (lines[0] if lines else "unknown"), None


def check_clis(path: str | None = None) -> list[CliCheck]:
    """Each known agent CLI: where it is on ``path`` (default $PATH) and its version."""
    checks = [CliCheck(provider, exe) for provider, exe, _ in DISCOVERABLE]
    for check in checks:
        check.path = shutil.which(check.executable, path=path)
        if check.path is None:
            info = AGENTS.get(check.provider)
            check.advice = (
                f"not on PATH; to use it: {info.install}" if info else "not on PATH"
            ) + " (or set a profile's binary to its full path)"

    def probe(check: CliCheck) -> None:
        if check.path:
            check.version, check.error = version_of(check.path)
            if check.error:
                check.advice = "reinstall it: " + _install(check.provider)

    with ThreadPoolExecutor(max_workers=max(1, len(checks))) as pool:
        list(pool.map(probe, checks))
    return checks


def check_profile(profile: Profile, path: str | None = None) -> ProfileCheck:
    """Binary, version, account folder and login of one profile."""
    check = ProfileCheck(profile.name, profile.provider)
    if not profile.enabled:
        check.login = "disabled"
        return check
    env = {**os.environ, **profile.env}
    if path is not None:
        env["PATH"] = path
    exe = _executable(profile)
    if exe is None:
        if profile.provider != "command":
            check.problems.append(f"unknown provider {profile.provider!r}")
        return check
    found = _resolve(exe, env.get("PATH"))
    if found is None:
        check.problems.append(
            f"{exe!r} is not installed or not executable; {_install(profile.provider)}"
            " or set the profile's binary to the CLI's full path"
        )
        return check
    check.binary = found
    check.version, error = version_of(found, env)
    if error:
        check.problems.append(f"{error}; reinstall: {_install(profile.provider)}")
    info = AGENTS.get(profile.provider)
    if info is not None:
        _check_account(check, profile, info, env)
    return check


def check_setup(check: ProfileCheck, profile: Profile, state: Path | None) -> None:
    """Add the known misconfigurations of ``profile``'s CLI to ``check``."""
    if not profile.enabled:
        return
    env = {**os.environ, **profile.env}
    if profile.provider == "codex" and profile.config_dir:
        env["CODEX_HOME"] = os.path.expanduser(profile.config_dir)
    found = preflight.check_setup(profile, env, state)
    check.problems.extend(found.problems)
    check.notes.extend(found.notes)


def _check_account(
    check: ProfileCheck, profile: Profile, info: AgentInfo, env: Mapping[str, str]
) -> None:
    login = find_login(profile, env)
    assert login is not None  # the provider has an AgentInfo
    check.folder, check.folder_exists = str(login.folder), login.folder_exists
    check.logged_in, check.login = login.how is not None, login.how or ""
    if not check.folder_exists:
        where = "the profile's config_dir" if profile.config_dir else f"${info.folder_env}"
        check.problems.append(
            f"account folder {login.folder} ({where}) does not exist; {info.login_hint}"
        )
    elif not check.logged_in:
        check.problems.append(f"no login or API key found for {login.folder}; {info.login_hint}")


def _executable(profile: Profile) -> str | None:
    if profile.binary:
        return profile.binary
    if profile.provider == "command":
        argv = profile.options.get("argv")
        return str(argv[0]) if isinstance(argv, list) and argv else None
    return next((exe for prov, exe, _ in DISCOVERABLE if prov == profile.provider), None)


def _resolve(exe: str, path: str | None) -> str | None:
    if os.sep in exe:
        return exe if os.path.isfile(exe) and os.access(exe, os.X_OK) else None
    return shutil.which(exe, path=path)


def _install(provider: str) -> str:
    info = AGENTS.get(provider)
    return f"install it with `{info.install}`" if info else "install it"


def check_acp(
    profile: Profile, home: Path | None = None, path: str | None = None
) -> AcpCheck | None:
    """The profile's ACP command; with ``home``, a handshake probe recorded there."""
    spec = acp_agents.spec_for(profile)
    if spec is None:
        return None
    check = AcpCheck()
    env = {**os.environ, **profile.env, **({"PATH": path} if path is not None else {})}
    try:
        check.command = acp_agents.find_binary(profile, spec, env)
    except AgentNotFound as exc:
        check.notes.append(str(exc))
        return check
    if spec.needs_bwrap and shutil.which("bwrap", path=env.get("PATH")) is None:
        check.notes.append(
            "bubblewrap (bwrap) is missing: codex-acp cannot run shell commands without it; "
            "install it (`apt-get install bubblewrap`)"
        )
    if home is None:
        return check
    folder = home / "doctor"
    folder.mkdir(parents=True, exist_ok=True)
    result = asyncio.run(acp_probe.probe(profile, folder))
    check.probed, check.ok, check.seconds = True, result.ok, result.seconds
    check.agent = result.agent
    if result.command:
        acp_probe.record(home, result.command, result)
    if not result.ok:
        check.notes.append(f"the ACP command did not answer initialize: {result.error}")
    return check


def _transport(profile: Profile, home: Path | None) -> str:
    try:
        wanted = acp_agents.requested_transport(profile)
    except ValueError as exc:
        return f"invalid ({exc})"
    if wanted != "auto":
        return wanted
    spec = acp_agents.spec_for(profile)
    if spec is None or home is None:
        return "native"
    return "acp" if acp_probe.verified(home, profile) else "native"


def run_doctor(
    profiles: Mapping[str, Profile],
    path: str | None = None,
    home: Path | None = None,
    *,
    default: str | None = None,
    default_reason: str = "",
) -> Report:
    """The whole report: CLIs on ``path`` (default $PATH) and every profile.

    With ``home`` (Baton's state folder), each profile's ACP command is probed and the
    outcome recorded there for the ``auto`` transport. ``default`` is the default worker of
    the settings (None: choose as the settings would, from ``profiles``).
    """
    if default is None:
        default, default_reason = choose_default(profiles, path)
    search = path if path is not None else os.environ.get("PATH", os.defpath)

    def one(p: Profile) -> ProfileCheck:
        check = check_profile(p, path)
        check_setup(check, p, home)
        if p.enabled:
            check.acp = check_acp(p, home, path)
            check.transport = _transport(p, home)
            if check.transport == "acp" and check.acp is not None and check.acp.ok is False:
                check.problems.append("the profile asks for ACP, but its ACP command fails")
            if check.transport == "acp" and p.worker_mcp:
                check.notes.append("warning: worker_mcp is not applied on the ACP transport")
        return check

    with ThreadPoolExecutor(max_workers=max(1, len(profiles))) as pool:
        checks = list(pool.map(one, profiles.values()))
    return Report(search.split(os.pathsep), check_clis(path), checks, default, default_reason)


def format_report(report: Report) -> str:
    """The report as plain lines for a terminal."""
    lines = ["Agent CLIs on PATH:"]
    for c in report.clis:
        if c.ok:
            lines.append(f"  ok       {c.executable:<9} {c.version}  ({c.path})")
        else:
            state = "broken" if c.path else "missing"
            lines.append(f"  {state:<8} {c.executable:<9} {c.error or ''}".rstrip())
            if c.advice:
                lines.append(f"           → {c.advice}")
    lines.append("Profiles:")
    for p in report.profiles:
        head = f"  {'ok' if p.ok else 'problem':<8} {p.name} ({p.provider})"
        if p.version:
            head += f"  {p.version}"
        lines.append(head)
        if p.folder:
            exists = "exists" if p.folder_exists else "missing"
            login = p.login if p.logged_in else "not logged in"
            lines.append(f"           account {p.folder} ({exists}; {login})")
        lines.extend(f"           → {problem}" for problem in p.problems)
        lines.extend(f"           note: {note}" for note in p.notes)
        if p.acp is not None:
            lines.append(f"           transport: {p.transport}")
            lines.append("           native stream: " + ("ok" if p.binary else "not available"))
            if p.acp.command is None:
                acp_line = "not installed"
            elif not p.acp.probed:
                acp_line = f"installed ({p.acp.command}), not probed"
            elif p.acp.ok:
                acp_line = f"ok: {p.acp.agent or p.acp.command} answered in {p.acp.seconds} s"
            else:
                acp_line = f"fails ({p.acp.command})"
            lines.append(f"           ACP: {acp_line}")
            lines.extend(f"             → {note}" for note in p.acp.notes)
    if report.default:
        lines.append(f"Default worker: {report.default} ({report.default_reason})")
    else:
        lines.append(f"No default worker: {report.default_reason}")
    if not report.ok:
        lines.append(
            "No real agent CLI can run as the default: install one and log in (see →), "
            "or set default_worker in your config (`baton init` writes one)."
        )
    lines.append("All profiles can run." if report.all_ok else "Some profiles cannot run (see →).")
    return "\n".join(lines)
