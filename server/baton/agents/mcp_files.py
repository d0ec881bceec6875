"""The files of the MCP servers an agent's CLI starts, for its sandbox to show them.

An agent CLI starts its stdio MCP servers inside the agent's sandbox, which shows only the
task's checkout, the CLI's own state folders and the read-only rest of the file system, with a
private, empty ``/tmp``. A server whose program or script lives where the sandbox hides would
never start and the agent would silently lack its tools. So, for every stdio server the agent
gets — the profile's ``worker_mcp.add`` and the servers of the CLI's own config that stay
enabled (:func:`started`) — :func:`files_of` finds what it needs:

- its ``command``: a path (absolute, or relative to the task's checkout, where the CLI starts
  its servers) or a name looked up on the agent's ``PATH`` (the server's own ``env.PATH``
  first);
- every argument, the value of a ``--name=value`` argument, and every value of its ``env``
  that is an absolute path naming an existing file or folder.

Each is shown exactly (a file, or a folder with all it holds; through a symlink, the path as
named and the file it leads to), except a file inside a ``node_modules`` folder or a Python
virtual environment, which is shown with the whole ``node_modules`` or environment (a program
there reads its package). An absolute path that does not exist but whose folder does (a log
the server would write) is kept as :attr:`ServerFiles.missing`: the sandbox says when the
agent could not create it. Relative arguments are left alone: they resolve in the checkout.

Servers from the project's own files (in the checkout: ``.mcp.json``, ``opencode.json``,
``.codex/config.toml``, ``.gemini/settings.json``, or a project's ``worker_mcp.add``) are
not the user's word: :attr:`ServerFiles.own` is False and the sandbox shows them nothing
outside the checkout (it says so instead).

What keeps a server from starting whatever the sandbox does (a command that does not exist
or is not on ``PATH``) is said in :attr:`ServerFiles.problems`, a warning naming the server.
Which of the paths the sandbox shows, refuses or says it cannot is
:mod:`baton.process.sandbox_mcp`'s decision.
"""

from __future__ import annotations

import os
import shutil
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.agents.worker_mcp import SUPPORTED, WorkerMcp, configured, read_json
from baton.config.profiles import Profile


@dataclass(frozen=True, slots=True)
class Server:
    """One stdio MCP server the agent's CLI will start, as Baton reads it."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    own: bool = True  # the user's word: worker_mcp.add of the user config, the CLI's user config


@dataclass(frozen=True, slots=True)
class ServerFiles:
    """What one MCP server needs to find in the agent's sandbox (see the module's docstring)."""

    server: str
    read: tuple[str, ...] = ()  # existing absolute paths: its program, the files it names
    program: tuple[str, ...] = ()  # those of ``read`` that show its program
    missing: tuple[str, ...] = ()  # absolute paths it names that do not exist yet
    own: bool = True
    problems: tuple[str, ...] = ()  # "warning: …": why it will not start, sandbox or not


def _stdio(name: str, entry: Mapping[str, Any], own: bool) -> Server | None:
    """The server an entry of any CLI's config starts (None: an HTTP one, or switched off)."""
    if entry.get("enabled") is False or entry.get("disabled") is True:
        return None
    command = entry.get("command")
    args = entry.get("args") or []
    if isinstance(command, list):  # OpenCode: the whole command line
        line: list[Any] = command
        command, args = (line[0] if line else None), line[1:]
    if not isinstance(command, str) or not command:
        return None
    env = entry.get("env") or entry.get("environment") or {}
    env = {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}
    listed = tuple(str(a) for a in args) if isinstance(args, list) else ()
    return Server(name, command, listed, env, own)


def project_names(provider: str, cwd: str) -> set[str]:
    """The servers the project's own files (in ``cwd``) define for ``provider``'s CLI."""
    root = Path(cwd)
    tables: list[object] = []
    match provider:
        case "claude":
            tables.append(read_json(root / ".mcp.json").get("mcpServers"))
        case "opencode":
            for folder in (root, root / ".opencode"):
                for name in ("opencode.json", "opencode.jsonc"):
                    tables.append(read_json(folder / name).get("mcp"))
        case "codex":
            try:
                text = (root / ".codex" / "config.toml").read_text(encoding="utf-8")
                tables.append(tomllib.loads(text).get("mcp_servers"))
            except (OSError, ValueError):
                pass
        case "gemini":
            tables.append(read_json(root / ".gemini" / "settings.json").get("mcpServers"))
    return {str(n) for t in tables if isinstance(t, dict) for n in t}


def started(profile: Profile, env: Mapping[str, str], cwd: str) -> list[Server]:
    """The stdio servers ``profile``'s agent starts in ``cwd``: those of its CLI's config
    that ``worker_mcp`` keeps, then the ones it adds (``env``: the broker's environment with
    the profile's ``env``)."""
    if profile.provider not in SUPPORTED:
        return []
    plan = WorkerMcp.of(profile)
    found = configured(profile, env, cwd)
    project = project_names(profile.provider, cwd) if found else set()
    servers = [
        _stdio(name, entry, own=name not in project)
        for name, entry in found.items()
        if plan is None or plan.keeps(name)
    ]
    if plan is not None:
        servers += [_stdio(name, entry, own=plan.add_own) for name, entry in plan.add.items()]
    return [s for s in servers if s is not None]


def _named(server: Server) -> Iterator[str]:
    """The values of ``server`` that may be paths: its arguments (and what follows the ``=``
    of a ``--name=value``), its environment's values."""
    for arg in server.args:
        yield arg
        if arg.startswith("-") and "=" in arg:
            yield arg.split("=", 1)[1]
    yield from server.env.values()


def shown_with(path: str) -> list[str]:
    """What showing ``path`` shows: itself (as named and as resolved), or for a file inside a
    ``node_modules`` folder or a Python virtual environment, that whole folder."""
    out: list[str] = []
    for each in dict.fromkeys((os.path.normpath(path), os.path.realpath(path))):
        parts = each.split(os.sep)
        if "node_modules" in parts[:-1]:
            at = len(parts) - 1 - parts[::-1].index("node_modules")
            out.append(os.sep.join(parts[: at + 1]))
            continue
        venv = _environment(each)
        out.append(venv or each)
    return list(dict.fromkeys(out))


def _environment(path: str) -> str:
    """The Python virtual environment ``path`` lies in (a folder with ``pyvenv.cfg``), or ""."""
    folder = os.path.dirname(path)
    while folder not in ("/", ""):
        if os.path.isfile(os.path.join(folder, "pyvenv.cfg")):
            return folder
        folder = os.path.dirname(folder)
    return ""


def _program(server: Server, path: str, cwd: str) -> tuple[str, str]:
    """The file ``server``'s command runs, or "" and why it will not start."""
    command = server.command
    if os.sep in command:
        found = command if os.path.isabs(command) else os.path.join(cwd, command)
        if os.path.isfile(found):
            return os.path.normpath(found), ""
        where = "" if os.path.isabs(command) else " in the task's checkout (where it starts)"
        return "", f"its command {command} does not exist{where}"
    found = shutil.which(command, path=server.env.get("PATH") or path) or ""
    if not found:
        return "", f"its command {command} is not on the agent's PATH"
    return found, ""


def files_of(server: Server, env: Mapping[str, str], cwd: str) -> ServerFiles:
    """What ``server`` needs to find in the sandbox of an agent whose environment is ``env``
    and whose working folder is ``cwd`` (see the module's docstring)."""
    read: list[str] = []
    missing: list[str] = []
    problems: list[str] = []
    program, why = _program(server, env.get("PATH") or os.defpath, cwd)
    shown = shown_with(program) if program else []
    read += shown
    if not program:
        problems.append(f"warning: MCP server {server.name} will not start: {why}")
    for value in _named(server):
        if not os.path.isabs(value) or value == "/":
            continue
        if os.path.exists(value):
            read += shown_with(value)
        elif os.path.isdir(os.path.dirname(os.path.normpath(value))):
            missing.append(os.path.normpath(value))
    return ServerFiles(
        server.name,
        read=tuple(dict.fromkeys(read)),
        program=tuple(shown),
        missing=tuple(dict.fromkeys(missing)),
        own=server.own,
        problems=tuple(problems),
    )


def for_profile(
    profile: Profile,
    agent_env: Mapping[str, str],
    cwd: str,
    config_env: Mapping[str, str] | None = None,
) -> list[ServerFiles]:
    """:func:`files_of` for every server :func:`started` finds for ``profile``'s agent, whose
    environment is ``agent_env``, in ``cwd``; its CLI's config files are found with
    ``config_env`` (the broker's environment with the profile's ``env`` by default)."""
    found = config_env if config_env is not None else {**os.environ, **profile.env}
    return [files_of(s, agent_env, cwd) for s in started(profile, found, cwd)]
