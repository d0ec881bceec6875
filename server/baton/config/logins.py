"""Where each agent CLI keeps its account, and whether a profile's account has a login.

Offline and cheap (a few file checks): used by ``baton doctor`` and by the choice of the
default worker (:func:`baton.config.profiles.choose_default`).
"""

from __future__ import annotations

import os
import shutil
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from baton.config.profiles import DISCOVERABLE, Profile


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """What doctor knows about one agent CLI: how to install it and where its account lives."""

    package: str  # the npm package that installs it
    folder_env: str  # the environment variable naming its account folder
    default_folder: str  # the folder used when that variable is not set
    key_env: tuple[str, ...] = ()  # variables that carry an API key instead of a login
    login_files: tuple[str, ...] = ()  # files (in the folder, or from ~) that hold a login
    login_hint: str = ""

    @property
    def install(self) -> str:
        return f"npm install -g {self.package}"


#: provider → what doctor knows about its CLI (one entry per agent module).
AGENTS: dict[str, AgentInfo] = {
    "claude": AgentInfo(
        package="@anthropic-ai/claude-code",
        folder_env="CLAUDE_CONFIG_DIR",
        default_folder="~/.claude",
        key_env=("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
        login_files=(".credentials.json",),
        login_hint="run `claude` once and use /login (with the same CLAUDE_CONFIG_DIR), "
        "or set ANTHROPIC_API_KEY in the profile's env",
    ),
    "codex": AgentInfo(
        package="@openai/codex",
        folder_env="CODEX_HOME",
        default_folder="~/.codex",
        key_env=("OPENAI_API_KEY", "CODEX_API_KEY"),
        login_files=("auth.json",),
        login_hint="run `codex login` (with the same CODEX_HOME), "
        "or set OPENAI_API_KEY in the profile's env",
    ),
    "opencode": AgentInfo(
        package="opencode-ai",
        folder_env="OPENCODE_CONFIG_DIR",
        default_folder="~/.config/opencode",
        key_env=("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENCODE_CONFIG_CONTENT"),
        login_files=("~/.local/share/opencode/auth.json",),
        login_hint="run `opencode auth login`, or configure a provider with a key",
    ),
    "gemini": AgentInfo(
        package="@google/gemini-cli",
        folder_env="GEMINI_CLI_HOME",
        default_folder="~/.gemini",
        key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"),
        login_files=("oauth_creds.json", ".gemini/oauth_creds.json"),
        login_hint="run `gemini` once and sign in, or set GEMINI_API_KEY in the profile's env",
    ),
    "pi": AgentInfo(
        package="@mariozechner/pi-coding-agent",
        folder_env="PI_CODING_AGENT_DIR",
        default_folder="~/.pi/agent",
        key_env=("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"),
        login_files=("auth.json", "models.json"),
        login_hint="run `pi` and use /login, or add a provider with a key to models.json",
    ),
}


@dataclass(frozen=True, slots=True)
class Login:
    """A profile's account folder and how it is logged in (None: no login found)."""

    folder: Path
    folder_exists: bool
    how: str | None  # "key in $ANTHROPIC_API_KEY", the login file's path, …


def find_login(profile: Profile, env: Mapping[str, str] | None = None) -> Login | None:
    """The login of ``profile`` under ``env`` (default: the environment plus the profile's);
    None for a provider Baton knows no account folder of (fake, command)."""
    info = AGENTS.get(profile.provider)
    if info is None:
        return None
    env = env if env is not None else {**os.environ, **profile.env}
    raw = profile.config_dir or env.get(info.folder_env) or info.default_folder
    folder = Path(os.path.expanduser(raw))
    exists = folder.is_dir()
    keys = [k for k in info.key_env if env.get(k)]
    if keys:
        return Login(folder, exists, f"key in ${keys[0]}")
    if profile.provider == "codex" and (key := _codex_provider_key(folder, env)):
        return Login(folder, exists, f"key in ${key} (config.toml provider)")
    for name in info.login_files:
        file = Path(os.path.expanduser(name)) if name.startswith("~") else folder / name
        if file.is_file():
            return Login(folder, exists, str(file))
    return Login(folder, exists, None)


def _codex_provider_key(folder: Path, env: Mapping[str, str]) -> str | None:
    """The env_key of the model provider config.toml selects, when that variable is set."""
    try:
        config = tomllib.loads((folder / "config.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    providers = config.get("model_providers")
    chosen = config.get("model_provider")
    if not isinstance(providers, dict) or not isinstance(providers.get(chosen), dict):
        return None
    key = providers[chosen].get("env_key")
    return str(key) if isinstance(key, str) and env.get(key) else None


#: Providers Baton never makes the default on its own (``fake`` is for demos and tests).
NOT_DEFAULT = frozenset({"fake", "command", "external"})


def why_unusable(profile: Profile, path: str | None = None) -> str | None:
    """Why ``profile`` cannot run now, or None when it can, as far as an offline look tells.

    Its binary must be installed (on ``path``, default $PATH) and, for a real agent CLI, a
    login or key found; a disabled profile never runs. Nothing is started: ``baton doctor``
    also runs each CLI's ``--version`` and checks its known misconfigurations.
    """
    if not profile.enabled:
        return "disabled"
    if profile.provider == "fake":
        return None  # the fake agent is Baton's own module
    known = (e for prov, e, _ in DISCOVERABLE if prov == profile.provider)
    exe = profile.binary or next(known, None)
    if profile.provider in ("command", "external") and exe is None:
        argv = profile.options.get("argv")
        exe = str(argv[0]) if isinstance(argv, list) and argv else None
    found = exe and (
        os.path.isfile(exe) if os.sep in exe else shutil.which(exe, path=path) is not None
    )
    if not found:
        return f"{exe or profile.provider} not installed"
    login = find_login(profile)
    if login is not None and login.how is None:
        return f"not logged in ({login.folder})"
    return None


def choose_default(profiles: Mapping[str, Profile], path: str | None = None) -> tuple[str, str]:
    """The best usable profile to be the default worker, and why; ``("", why not)`` if none.

    Usable (:func:`why_unusable`): enabled, a real agent CLI whose binary is installed, with
    a login or key found. Among those, the order of
    :data:`~baton.config.profiles.DISCOVERABLE` decides (Claude Code, Codex, OpenCode,
    Gemini, Pi), a profile named after its provider first. The fake agent is never chosen.
    """
    rank = {provider: i for i, (provider, _, _) in enumerate(DISCOVERABLE)}
    real = [p for p in profiles.values() if p.enabled and p.provider not in NOT_DEFAULT]
    real.sort(key=lambda p: (rank.get(p.provider, len(rank)), p.name != p.provider, p.name))
    unusable: list[str] = []
    for p in real:
        why = why_unusable(p, path)
        if why is not None:
            unusable.append(f"{p.name}: {why}")
            continue
        login = find_login(p)
        how = f"logged in: {login.how}" if login is not None and login.how else "installed"
        return p.name, f"the first usable agent CLI found ({p.label or p.provider}, {how})"
    if not real:
        return "", "no agent CLI is installed (run `baton doctor` to see how to install one)"
    return "", "no agent CLI can run: " + "; ".join(unusable) + " (see `baton doctor`)"
