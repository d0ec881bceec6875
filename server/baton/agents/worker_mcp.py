"""What MCP servers a worker's agent gets: a profile's ``worker_mcp``, in each CLI's own terms.

Every MCP server an agent CLI starts sends its tools' definitions with every model request,
whether the task uses them or not. A profile's ``worker_mcp`` says which of the CLI's own
servers (its user, account and project config) a Baton task goes without (``disable``, ``"*"``
for all) and which it gets besides (``add``). It is applied for the task's process only —
through flags, environment or a file in the task's folder — and the CLI's config files are
never written:

- Claude Code: ``--mcp-config FILE --strict-mcp-config``, FILE (in the task's folder) holding
  the servers of ``.claude.json`` (its ``mcpServers``, and those of the project entry for the
  working folder) and of the project's ``.mcp.json``, minus the disabled, plus the added.
- OpenCode: ``OPENCODE_CONFIG_CONTENT`` (merged over its config files) with the disabled
  servers' entries copied and ``enabled: false``, and the added ones.
- Codex: ``-c mcp_servers.NAME.enabled=false`` per disabled server of its ``config.toml`` and
  ``-c mcp_servers.NAME.…`` for the added ones.
- Gemini CLI: the system settings Baton already writes for the task gain ``mcp.excluded`` and
  ``mcpServers``.
- Pi has no MCP support: the task's log says ``worker_mcp`` does nothing there.

What could not be done (a name no config has, a CLI without MCP) is said in a note for the
task's log (:attr:`Applied.notes`), never dropped silently.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.config.profiles import Profile

#: Providers that start MCP servers, and those that have none at all.
SUPPORTED = ("claude", "codex", "gemini", "opencode")
UNSUPPORTED = ("pi",)
#: The file holding a Claude Code task's MCP servers, in the task's folder.
CLAUDE_FILE = "claude-mcp.json"
#: Set in a profile's ``worker_mcp`` (by the config loader) when its ``add`` was written in a
#: project's file: the sandbox then shows those servers no file outside the checkout.
ADDED_BY_PROJECT = "added_by_project"
#: A server name Codex's ``-c`` dotted keys can carry as it is.
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True, slots=True)
class WorkerMcp:
    """A profile's ``worker_mcp``: the servers it disables (``all_``: every one) and adds
    (``add_own``: written in the user's config, not a project's)."""

    disable: frozenset[str] = frozenset()
    all_: bool = False
    add: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    add_own: bool = True

    @classmethod
    def of(cls, profile: Profile) -> WorkerMcp | None:
        """The profile's plan, or None when it sets nothing (the CLI's own servers)."""
        raw = profile.worker_mcp or {}
        disable = [str(n) for n in raw.get("disable") or []]
        add = raw.get("add") or {}
        if not disable and not add:
            return None
        named = frozenset(n for n in disable if n != "*")
        own = not raw.get(ADDED_BY_PROJECT)
        return cls(disable=named, all_="*" in disable, add=dict(add), add_own=own)

    def keeps(self, name: str) -> bool:
        """Whether a server of the CLI's own config stays (an added one of that name wins)."""
        return not self.all_ and name not in self.disable and name not in self.add

    def missing(self, found: Iterable[str]) -> list[str]:
        """Disabled names none of the CLI's config files has."""
        return sorted(self.disable - set(found) - set(self.add))


@dataclass(frozen=True, slots=True)
class Applied:
    """What a launch gains from a plan: argv, environment, files the agent reads, log notes."""

    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    readable: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)  # Gemini: settings sections


def summary(cli: str, plan: WorkerMcp, found: Iterable[str]) -> list[str]:
    """The task's log lines: what the agent gets, and disabled names no config has."""
    names = sorted(set(found))
    kept = [n for n in names if plan.keeps(n)]
    off = [n for n in names if not plan.keeps(n) and n not in plan.add]
    said = (", ".join(names) or "none" for names in (kept, off, sorted(plan.add)))
    lines = ["worker_mcp for {}: kept {}; disabled {}; added {}".format(cli, *said)]
    missing = plan.missing(names)
    if missing:
        lines.append(
            f"warning: worker_mcp disables {', '.join(missing)}, which no {cli} config"
            " Baton read has (nothing to disable)"
        )
    return lines


def unsupported(provider: str) -> str:
    return (
        f"warning: worker_mcp is set but {provider} has no MCP servers to give or take:"
        " it does nothing for this profile"
    )


# -- reading the CLIs' own files ---------------------------------------------------------------

_JSONC_TOKENS = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.S)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def read_json(path: Path) -> dict[str, Any]:
    """A JSON (or JSONC: comments, trailing commas) object; empty when missing or unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    return parse_jsonc(text)


def parse_jsonc(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        bare = _JSONC_TOKENS.sub(lambda m: m[0] if m[0].startswith('"') else "", text)
        try:
            data = json.loads(_TRAILING_COMMA.sub(r"\1", bare))
        except ValueError:
            return {}
    return data if isinstance(data, dict) else {}


def _servers(table: object) -> dict[str, dict[str, Any]]:
    if not isinstance(table, dict):
        return {}
    return {str(k): dict(v) for k, v in table.items() if isinstance(v, dict)}


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or os.path.expanduser("~"))


# -- Claude Code ---------------------------------------------------------------------------------


def claude_servers(env: Mapping[str, str], cwd: str) -> dict[str, dict[str, Any]]:
    """The servers Claude Code would start in ``cwd``: ``.claude.json``'s (user scope, and the
    project entry of ``cwd``), then the project's ``.mcp.json``."""
    moved = env.get("CLAUDE_CONFIG_DIR")
    config = Path(os.path.expanduser(moved)) if moved else _home(env)
    user = read_json(config / ".claude.json")
    found = _servers(user.get("mcpServers"))
    projects = user.get("projects")
    if isinstance(projects, dict) and isinstance(projects.get(cwd), dict):
        found.update(_servers(projects[cwd].get("mcpServers")))
    found.update(_servers(read_json(Path(cwd) / ".mcp.json").get("mcpServers")))
    return found


def _claude_entry(server: Mapping[str, Any]) -> dict[str, Any]:
    if "url" in server:
        return {"type": "http", "url": server["url"], "headers": dict(server.get("headers") or {})}
    return {
        "type": "stdio",
        "command": server["command"],
        "args": list(server.get("args") or []),
        "env": dict(server.get("env") or {}),
    }


def for_claude(plan: WorkerMcp, env: Mapping[str, str], cwd: str, task_dir: Path) -> Applied:
    """``--mcp-config FILE --strict-mcp-config``: FILE names exactly the servers the agent gets."""
    found = claude_servers(env, cwd)
    chosen = {n: s for n, s in found.items() if plan.keeps(n)}
    chosen.update({n: _claude_entry(s) for n, s in plan.add.items()})
    task_dir.mkdir(parents=True, exist_ok=True)
    path = task_dir / CLAUDE_FILE
    path.unlink(missing_ok=True)  # made anew, 0600: an added server's env may hold a secret
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"mcpServers": chosen}, f, indent=1)
    return Applied(
        argv=["--mcp-config", str(path), "--strict-mcp-config"],
        readable=(str(path),),
        notes=tuple(summary("Claude Code", plan, found)),
    )


# -- OpenCode ------------------------------------------------------------------------------------


def opencode_files(env: Mapping[str, str], cwd: str) -> list[Path]:
    """OpenCode's config files under ``env`` for ``cwd``, lowest precedence first."""
    xdg = env.get("XDG_CONFIG_HOME") or str(_home(env) / ".config")
    names = ("config.json", "opencode.json", "opencode.jsonc")
    files = [Path(xdg) / "opencode" / n for n in names]
    if env.get("OPENCODE_CONFIG"):
        files.append(Path(os.path.expanduser(env["OPENCODE_CONFIG"])))
    files += [Path(cwd) / n for n in names[1:]]
    for folder in (Path(cwd) / ".opencode", env.get("OPENCODE_CONFIG_DIR")):
        if folder:
            files += [Path(os.path.expanduser(str(folder))) / n for n in names[1:]]
    return files


def opencode_servers(env: Mapping[str, str], cwd: str) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for path in opencode_files(env, cwd):
        found.update(_servers(read_json(path).get("mcp")))
    found.update(_servers(parse_jsonc(env.get("OPENCODE_CONFIG_CONTENT") or "{}").get("mcp")))
    return found


def _opencode_entry(server: Mapping[str, Any]) -> dict[str, Any]:
    if "url" in server:
        headers = dict(server.get("headers") or {})
        return {"type": "remote", "url": server["url"], "headers": headers, "enabled": True}
    entry: dict[str, Any] = {
        "type": "local",
        "command": [server["command"], *(server.get("args") or [])],
        "enabled": True,
    }
    if server.get("env"):
        entry["environment"] = dict(server["env"])
    return entry


def for_opencode(plan: WorkerMcp, env: Mapping[str, str], cwd: str) -> Applied:
    """``OPENCODE_CONFIG_CONTENT`` (the profile's own, if any, kept) whose ``mcp`` turns the
    disabled servers off (their entries copied, ``enabled: false``) and adds the others."""
    found = opencode_servers(env, cwd)
    content = parse_jsonc(env.get("OPENCODE_CONFIG_CONTENT") or "{}")
    mcp = _servers(content.get("mcp"))
    for name, entry in found.items():
        if not plan.keeps(name) and name not in plan.add:
            mcp[name] = {**entry, "enabled": False}
    mcp.update({n: _opencode_entry(s) for n, s in plan.add.items()})
    content["mcp"] = mcp
    return Applied(
        env={"OPENCODE_CONFIG_CONTENT": json.dumps(content)},
        notes=tuple(summary("OpenCode", plan, found)),
    )


# -- Codex ---------------------------------------------------------------------------------------


def codex_servers(home: Path, cwd: str) -> dict[str, dict[str, Any]]:
    """The ``mcp_servers`` of ``home/config.toml`` and of the project's ``.codex/config.toml``."""
    found: dict[str, dict[str, Any]] = {}
    for path in (home / "config.toml", Path(cwd) / ".codex" / "config.toml"):
        try:
            found.update(
                _servers(tomllib.loads(path.read_text(encoding="utf-8")).get("mcp_servers"))
            )
        except (OSError, ValueError):
            continue
    return found


def _toml(value: object) -> str:
    """A TOML value for a ``-c`` override (JSON strings and arrays of strings are TOML too)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def for_codex(plan: WorkerMcp, home: Path, cwd: str) -> Applied:
    """``-c mcp_servers.NAME.enabled=false`` per disabled server of its config, ``-c
    mcp_servers.NAME.command=…`` (``args``, ``env``; ``url``, ``http_headers``) per added one."""
    found = codex_servers(home, cwd)
    argv: list[str] = []
    notes = summary("Codex", plan, found)
    odd: list[str] = []
    for name in sorted(found):
        if plan.keeps(name) or name in plan.add:
            continue
        if not _BARE.match(name):
            odd.append(name)
            continue
        argv += ["-c", f"mcp_servers.{name}.enabled=false"]
    for name, server in plan.add.items():
        if not _BARE.match(name):
            odd.append(name)
            continue
        keys = (
            {"url": server["url"], "http_headers": server.get("headers") or {}}
            if "url" in server
            else {k: server.get(k) for k in ("command", "args", "env")}
        )
        for key, value in keys.items():
            if value or key in ("command", "url"):
                argv += ["-c", f"mcp_servers.{name}.{key}={_toml(value)}"]
        argv += ["-c", f"mcp_servers.{name}.enabled=true"]
    if odd:
        notes.append(
            f"warning: worker_mcp names {', '.join(odd)}, which Codex's -c overrides cannot"
            " spell (letters, digits, - and _ only): left as its config says"
        )
    return Applied(argv=argv, notes=tuple(notes))


# -- Gemini CLI ----------------------------------------------------------------------------------


def gemini_servers(account: Path, cwd: str, system: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Gemini's servers (system, user, project settings), and its ``mcp`` settings merged
    (``excluded`` joined; the last ``allowed``)."""
    found: dict[str, Any] = {}
    lists: dict[str, Any] = {"excluded": []}
    for path in (account / ".gemini" / "settings.json", Path(cwd) / ".gemini" / "settings.json"):
        data = read_json(path)
        found.update(_servers(data.get("mcpServers")))
        mcp = data.get("mcp")
        if isinstance(mcp, dict) and isinstance(mcp.get("excluded"), list):
            lists["excluded"] += [str(n) for n in mcp["excluded"]]
        if isinstance(mcp, dict) and isinstance(mcp.get("allowed"), list):
            lists["allowed"] = [str(n) for n in mcp["allowed"]]
    found.update(_servers(read_json(system).get("mcpServers")))
    return found, lists


def _gemini_entry(server: Mapping[str, Any]) -> dict[str, Any]:
    if "url" in server:
        return {"httpUrl": server["url"], "headers": dict(server.get("headers") or {})}
    return {
        "command": server["command"],
        "args": list(server.get("args") or []),
        "env": dict(server.get("env") or {}),
    }


def for_gemini(plan: WorkerMcp, account: Path, cwd: str, system: Path) -> Applied:
    """Settings sections forced on the task: ``mcp.excluded`` (what was excluded already, and
    the disabled), ``mcp.allowed`` (when the user's settings have one: the added join it),
    ``mcpServers`` (the added)."""
    found, lists = gemini_servers(account, cwd, system)
    off = sorted(plan.disable | {n for n in found if not plan.keeps(n) and n not in plan.add})
    mcp: dict[str, Any] = {"excluded": sorted({*lists["excluded"], *off} - set(plan.add))}
    if "allowed" in lists:  # an allow list of the user's would keep the added ones out
        mcp["allowed"] = sorted({*lists["allowed"], *plan.add} - set(off))
    settings: dict[str, Any] = {"mcp": mcp}
    if plan.add:
        settings["mcpServers"] = {n: _gemini_entry(s) for n, s in plan.add.items()}
    return Applied(settings=settings, notes=tuple(summary("Gemini CLI", plan, found)))


# -- what doctor says ----------------------------------------------------------------------------

_LABELS = {
    "claude": "Claude Code",
    "codex": "Codex",
    "gemini": "Gemini CLI",
    "opencode": "OpenCode",
}


def configured(profile: Profile, env: Mapping[str, str], cwd: str) -> dict[str, dict[str, Any]]:
    """The servers of the config files ``profile``'s CLI would read in ``cwd`` (``env``: the
    broker's environment with the profile's ``env``), as each CLI writes them."""
    env = dict(env)
    match profile.provider:
        case "claude":
            if profile.config_dir:
                env["CLAUDE_CONFIG_DIR"] = profile.config_dir
            return claude_servers(env, cwd)
        case "opencode":
            if profile.config_dir:
                env["OPENCODE_CONFIG_DIR"] = profile.config_dir
            return opencode_servers(env, cwd)
        case "codex":
            raw = profile.config_dir or env.get("CODEX_HOME") or "~/.codex"
            return codex_servers(Path(os.path.expanduser(raw)), cwd)
        case "gemini":
            raw = profile.config_dir or env.get("GEMINI_CLI_HOME") or str(_home(env))
            system = Path(
                env.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH") or "/etc/gemini-cli/settings.json"
            )
            return gemini_servers(Path(os.path.expanduser(raw)), cwd, system)[0]
    return {}


def doctor_notes(profile: Profile, env: Mapping[str, str], cwd: str) -> list[str]:
    """What ``profile``'s ``worker_mcp`` does with the config files its CLI would read in
    ``cwd``, and what it cannot do; nothing is written."""
    plan = WorkerMcp.of(profile)
    if plan is None:
        return []
    if profile.provider not in SUPPORTED:
        label = "Pi" if profile.provider == "pi" else f"provider {profile.provider}"
        return [unsupported(label)]
    return summary(_LABELS[profile.provider], plan, configured(profile, env, cwd))
