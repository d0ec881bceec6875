"""Known misconfigurations of agent CLIs, found before anything starts.

Each check reads only files and the environment. ``problems`` are what makes a CLI fail (the
adapter refuses the launch with :class:`Misconfigured`, so the task ends ``worker_error`` with
the fix; doctor lists them); ``notes`` are what Baton works around, said by doctor.

- Codex refuses to create its helper binaries when ``CODEX_HOME`` is inside the temp folder
  (``$TMPDIR``, else ``/tmp``): "Refusing to create helper binaries under temporary dir";
  every edit then fails while the run still "completes".
- Gemini skips a system settings file unless it and every folder above it belong to root and
  no one else may write to them ("Parent directory '/tmp' is insecure"); Baton then passes its
  settings through a private home (see :mod:`baton.agents.gemini`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from baton.agents import mcp_files
from baton.agents.gemini import skipped_reason
from baton.agents.worker_mcp import doctor_notes
from baton.config.profiles import Profile
from baton.errors import Unavailable


class Misconfigured(Unavailable, OSError):
    """The CLI would misbehave as configured; nothing was started. The message says the fix.

    An :class:`OSError` so the runtime fails the task ``worker_error`` with this message before
    any process starts.
    """


@dataclass(slots=True)
class Findings:
    problems: list[str] = field(default_factory=list)  # the CLI cannot work: each says the fix
    notes: list[str] = field(default_factory=list)  # Baton works around it: said for the record


def temp_dir(env: Mapping[str, str]) -> Path:
    """The temp folder a CLI started with ``env`` uses (``$TMPDIR``, else ``/tmp``)."""
    return Path(env.get("TMPDIR") or "/tmp")


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def codex_home(profile: Profile, env: Mapping[str, str]) -> Path:
    raw = profile.config_dir or env.get("CODEX_HOME") or "~/.codex"
    return Path(os.path.expanduser(raw))


def check_codex(profile: Profile, env: Mapping[str, str]) -> Findings:
    found = Findings()
    home, tmp = codex_home(profile, env), temp_dir(env)
    if _inside(home, tmp):
        found.problems.append(
            f"Codex's home {home} (CODEX_HOME) is inside the temp folder {tmp}: Codex then "
            "refuses to create its helper binaries and every edit fails; fix: move the "
            "profile's config_dir (CODEX_HOME) out of the temp folder, or set TMPDIR elsewhere "
            "in the profile's env"
        )
    return found


def check_gemini(profile: Profile, env: Mapping[str, str], state: Path | None) -> Findings:
    found = Findings()
    if state is None:
        return found
    reason = skipped_reason(state / "tasks" / "x" / "gemini-system-settings.json")
    if reason is not None:
        found.notes.append(
            f"Gemini skips system settings files under {state} ({reason}); Baton passes its "
            "settings (no usage statistics, no telemetry, bounded retries) through a private "
            "GEMINI_CLI_HOME per task instead, linking the account's logins and chats"
        )
    return found


def check(profile: Profile, env: Mapping[str, str], state: Path | None = None) -> Findings:
    """The known misconfigurations of ``profile`` under ``env`` (with Baton's state folder)."""
    match profile.provider:
        case "codex":
            return check_codex(profile, env)
        case "gemini":
            return check_gemini(profile, env, state)
        case _:
            return Findings()


def check_setup(profile: Profile, env: Mapping[str, str], state: Path | None = None) -> Findings:
    """:func:`check`, and what the profile's ``worker_mcp`` does (or cannot do) in the current
    folder, and which MCP servers its agent would get that cannot start (for doctor)."""
    found = check(profile, env, state)
    found.notes.extend(doctor_notes(profile, env, os.getcwd()))
    servers = mcp_files.for_profile(profile, env, os.getcwd(), config_env=env)
    found.notes.extend(p for server in servers for p in server.problems)
    return found


def refuse(profile: Profile, env: Mapping[str, str]) -> None:
    """Raise :class:`Misconfigured` with the first problem of ``profile``, if any."""
    found = check(profile, env)
    if found.problems:
        raise Misconfigured(found.problems[0])
