"""The commented user config ``baton init`` writes for the agent CLIs found on this machine.

Every found CLI gets a profile; one that has no login yet says how to log in (it becomes
usable, and may become the default, once it has one). ``default_worker`` is the choice
:func:`baton.config.logins.choose_default` makes, with its reason as a comment; with no
usable CLI it is left commented out, so nothing is chosen silently (the fake agent never is).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime

from baton.config.logins import AGENTS, NOT_DEFAULT, choose_default, find_login
from baton.config.profiles import Profile


def _q(text: str) -> str:
    return json.dumps(text)  # a TOML basic string is a JSON string for these values


def starter_config(profiles: Mapping[str, Profile], path: str | None = None) -> str:
    """The text of a user config for ``profiles`` (the agent CLIs found on ``path``)."""
    default, reason = choose_default(profiles, path)
    when = datetime.now(UTC).strftime("%Y-%m-%d")
    lines = [
        f"# Baton's user config, written by `baton init` on {when}. Every key is optional;",
        "# a project's .baton.toml (or [tool.baton] in pyproject.toml) overrides these, but",
        "# never a profile's binary, config_dir, env or options here, nor names a secret.",
        "# Reference: docs/reference/config.md. Check it with `baton doctor`.",
        "",
        "# The worker a delegation goes to when no rule decides:",
        *(f"#   {part}" for part in reason.split("; ")),
    ]
    if default:
        lines.append(f"default_worker = {_q(default)}")
    else:
        lines.append('# default_worker = "claude"   # once an agent CLI is installed and logged in')
    lines += [
        "",
        '# on_rate_limit = "handoff"   # or "hold": wait for the same account\'s reset',
        '# brief_rules = ["Run the tests before you finish."]',
    ]
    real = [p for p in profiles.values() if p.provider not in NOT_DEFAULT]
    if not real:
        lines += ["", "# No agent CLI was found on PATH; `baton doctor` says how to install one."]
    for p in real:
        info = AGENTS.get(p.provider)
        login = find_login(p)
        lines += ["", f"# {p.label or p.provider}, found on PATH."]
        lines.append(f"[profiles.{p.name}]")
        lines.append(f"provider = {_q(p.provider)}")
        if p.binary:
            lines.append(f"binary = {_q(p.binary)}")
        if login is not None and login.how is None:
            hint = info.login_hint if info else "log in"
            lines.append(f"# not logged in yet: {hint}")
        elif login is not None:
            lines.append(f"# logged in: {login.how}")
        lines.append('# model = "..."                 # the model to ask for; default: the CLI\'s')
        if info is not None:
            lines.append(
                f"# config_dir = {_q(info.default_folder)}   # another account: its own "
                f"folder (${info.folder_env})"
            )
            if info.key_env:
                key = info.key_env[0]
                lines.append(
                    f"# env = {{ {key} = {_q('keyring:baton/' + p.name)} }}"
                    f"   # `baton secret set {p.name}`"
                )
        lines.append("# concurrency = 4")
    return "\n".join(lines) + "\n"
