"""Where each agent CLI keeps its own state: the folders its sandbox leaves writable.

An agent CLI writes its sessions, settings, logs and credentials under a folder of its own
(the profile's ``config_dir`` names it through the variable in :data:`CONFIG_VARIABLES`).
:func:`state_paths` lists them for one launch environment; the sandbox
(:mod:`baton.process.sandbox`) makes exactly these writable, and hides the default ones of
every *other* provider (:func:`all_state_paths`), so one account cannot read another's
credentials. Paths are absolute and may not exist yet.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

#: provider → the variable that moves its state folder (what a profile's ``config_dir`` sets).
CONFIG_VARIABLES: dict[str, str] = {
    "claude": "CLAUDE_CONFIG_DIR",
    "codex": "CODEX_HOME",
    "gemini": "GEMINI_CLI_HOME",
    "opencode": "OPENCODE_CONFIG_DIR",
    "pi": "PI_CODING_AGENT_DIR",
}


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def _xdg(env: Mapping[str, str], name: str, default: str) -> str:
    value = env.get(name, "")
    return value if os.path.isabs(value) else os.path.join(_home(env), default)


def state_paths(provider: str, env: Mapping[str, str]) -> list[str]:
    """The folders (and files) ``provider``'s CLI writes its own state to under ``env``."""
    home = _home(env)
    moved = os.path.expanduser(env.get(CONFIG_VARIABLES.get(provider, ""), "") or "")
    match provider:
        case "claude":
            if moved:  # the account's .claude.json lives inside it too
                return [moved]
            return [os.path.join(home, ".claude"), os.path.join(home, ".claude.json")]
        case "codex":
            return [moved or os.path.join(home, ".codex")]
        case "gemini":
            return [os.path.join(moved or home, ".gemini")]
        case "opencode":
            found = [
                os.path.join(_xdg(env, "XDG_CONFIG_HOME", ".config"), "opencode"),
                os.path.join(_xdg(env, "XDG_DATA_HOME", ".local/share"), "opencode"),
                os.path.join(_xdg(env, "XDG_STATE_HOME", ".local/state"), "opencode"),
                os.path.join(_xdg(env, "XDG_CACHE_HOME", ".cache"), "opencode"),
            ]
            return [*found, moved] if moved else found
        case "pi":
            return [moved or os.path.join(home, ".pi", "agent")]
    return []


def all_state_paths(env: Mapping[str, str]) -> dict[str, list[str]]:
    """provider → its default state paths under ``env`` (the broker's, usually)."""
    return {provider: state_paths(provider, env) for provider in CONFIG_VARIABLES}
