"""Per agent over ACP: the command that speaks ACP, its environment, its quirks.

=========  ======================================  ==========================================
provider   ACP command                             quirk handled
=========  ======================================  ==========================================
claude     ``claude-agent-acp``                    after a cancelled or failed turn the next
           (npm @zed-industries/claude-agent-acp)  prompt returns an empty ``end_turn``: the
                                                   runner starts a new session and carries the
                                                   context over; ``IS_SANDBOX`` is removed
                                                   from its env (session/new fails with it)
codex      ``codex-acp -c …``                      needs bubblewrap (``bwrap``) for shell
           (npm @zed-industries/codex-acp)         commands (``baton doctor`` checks)
opencode   ``opencode acp``                        retries a dead model stream forever,
                                                   re-sending the same text: a repeat guard
                                                   stops the turn
gemini     ``gemini --acp``                        a cut stream ends as ``end_turn`` with no
                                                   tokens: the result is flagged truncated
=========  ======================================  ==========================================

Any other ACP agent works through ``profile.options["acp_argv"]`` (its full command line).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baton.agents import claude, gemini, opencode
from baton.agents.base import AgentNotFound, Turn
from baton.config.profiles import Profile

TRANSPORTS = ("acp", "native", "auto")


@dataclass(frozen=True, slots=True)
class AcpAgent:
    """How one provider speaks ACP."""

    provider: str
    executable: str  # the ACP command's name (looked up on PATH, then beside the profile binary)
    args: tuple[str, ...] = ()
    package: str = ""  # the npm package that installs the ACP command
    fresh_session_after_abort: bool = False
    guard_repeats: bool = False
    flag_zero_usage: bool = False
    needs_bwrap: bool = False
    unset_env: tuple[str, ...] = ()  # variables of the broker's env the agent must not see

    @property
    def install(self) -> str:
        return f"npm install -g {self.package}" if self.package else ""


AGENTS: dict[str, AcpAgent] = {
    "claude": AcpAgent(
        "claude",
        "claude-agent-acp",
        package="@zed-industries/claude-agent-acp",
        fresh_session_after_abort=True,
        # With IS_SANDBOX set (as in some containers), session/new fails as root:
        # "Query closed before response received". Baton wants prompts, not bypass mode.
        unset_env=("IS_SANDBOX",),
    ),
    "codex": AcpAgent("codex", "codex-acp", package="@zed-industries/codex-acp", needs_bwrap=True),
    "opencode": AcpAgent(
        "opencode", "opencode", ("acp",), package="opencode-ai", guard_repeats=True
    ),
    "gemini": AcpAgent(
        "gemini", "gemini", ("--acp",), package="@google/gemini-cli", flag_zero_usage=True
    ),
}

#: Codex settings for an ACP session: ask before commands (Baton's policy answers), write
#: only in the workspace, call no one.
CODEX_ARGS = (
    "-c",
    'approval_policy="untrusted"',
    "-c",
    'sandbox_mode="workspace-write"',
    "-c",
    "analytics.enabled=false",
    "-c",
    "check_for_update_on_startup=false",
    "-c",
    "features.plugins=false",
)
#: OpenCode asks Baton before edits, commands and fetches; Baton's policy answers.
OPENCODE_PERMISSIONS = {"edit": "ask", "bash": "ask", "webfetch": "ask"}


def spec_for(profile: Profile) -> AcpAgent | None:
    """The ACP spec of a profile's provider; a generic one when it names ``acp_argv``."""
    if _acp_argv(profile):
        known = AGENTS.get(profile.provider)
        return known or AcpAgent(profile.provider, "")
    return AGENTS.get(profile.provider)


def _acp_argv(profile: Profile) -> list[str] | None:
    argv = profile.options.get("acp_argv")
    if isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv):
        return list(argv)
    return None


def find_binary(profile: Profile, spec: AcpAgent, env: Mapping[str, str] | None = None) -> str:
    """The ACP command's executable, or :class:`AgentNotFound` saying how to install it."""
    own = _acp_argv(profile)
    if own is not None:
        return own[0]
    explicit = profile.options.get("acp_binary")
    if isinstance(explicit, str) and explicit:
        return explicit
    if spec.executable in (profile.provider,) and profile.binary:
        return profile.binary  # opencode, gemini: the CLI itself speaks ACP
    path = (env or {}).get("PATH") or profile.env.get("PATH") or os.environ.get("PATH", "")
    found = shutil.which(spec.executable, path=path)
    if found:
        return found
    if profile.binary and os.sep in profile.binary:
        beside = Path(profile.binary).parent / spec.executable
        if beside.is_file() and os.access(beside, os.X_OK):
            return str(beside)
    hint = f"; install it with `{spec.install}`" if spec.install else ""
    raise AgentNotFound(
        f"the ACP command {spec.executable!r} of {profile.provider} was not found{hint}, "
        'set the profile\'s options.acp_binary, or use options.transport = "native"'
    )


def command(profile: Profile, turn: Turn) -> tuple[list[str], dict[str, str]]:
    """argv and env (added to the broker's) of the agent's ACP process for ``turn``."""
    spec = spec_for(profile)
    if spec is None:
        raise AgentNotFound(f"{profile.provider} has no ACP transport")
    env = dict(profile.env)
    own = _acp_argv(profile)
    if own is not None:
        return own, env
    argv = [find_binary(profile, spec), *spec.args]
    model = turn.model or profile.model
    match spec.provider:
        case "claude":
            if profile.config_dir:
                env["CLAUDE_CONFIG_DIR"] = os.path.expanduser(profile.config_dir)
            env.update(claude.QUIET_ENV)
            if model:
                env["ANTHROPIC_MODEL"] = model
        case "codex":
            if profile.config_dir:
                env["CODEX_HOME"] = os.path.expanduser(profile.config_dir)
            argv += CODEX_ARGS
            if model:
                argv += ["-c", f"model={json.dumps(model)}"]
        case "opencode":
            if profile.config_dir:
                env["OPENCODE_CONFIG_DIR"] = profile.config_dir
            env.update(opencode.QUIET_ENV)
            for folder in opencode.config_dirs({**os.environ, **env}):
                opencode.seed_config_dir(folder)
            env["OPENCODE_CONFIG_CONTENT"] = _opencode_config(
                env.get("OPENCODE_CONFIG_CONTENT") or os.environ.get("OPENCODE_CONFIG_CONTENT"),
                model,
            )
        case "gemini":
            if profile.config_dir:
                env["GEMINI_CLI_HOME"] = profile.config_dir
            env.update(gemini.QUIET_ENV)
            env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"] = str(
                gemini.system_settings(turn, {**os.environ, **env})
            )
            if model:
                argv += ["-m", model]
    env["PWD"] = turn.cwd
    return argv, env


def _opencode_config(current: str | None, model: str | None) -> str:
    config: dict[str, Any] = {}
    if current:
        try:
            loaded = json.loads(current)
            if isinstance(loaded, dict):
                config = loaded
        except ValueError:
            pass
    config["permission"] = {**_as_dict(config.get("permission")), **OPENCODE_PERMISSIONS}
    if model and "/" in model:
        config["model"] = model
    return json.dumps(config)


def _as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def requested_transport(profile: Profile) -> str:
    """The profile's ``options.transport`` (``auto`` when unset)."""
    value = str(profile.options.get("transport") or "auto").lower()
    if value not in TRANSPORTS:
        raise ValueError(
            f"profile {profile.name}: transport must be one of {', '.join(TRANSPORTS)}, "
            f"got {value!r}"
        )
    return value


def python() -> str:
    """The interpreter that runs Baton's own helper processes."""
    return sys.executable
