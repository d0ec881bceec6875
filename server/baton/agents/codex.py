"""Codex CLI (provider ``codex``): ``codex exec --json``, one process per turn.

The worker runs in Baton's worktree with ``-s workspace-write`` and ``approval_policy="never"``
(nobody could answer an approval prompt); a later turn resumes the thread with
``codex exec … resume <thread_id> <prompt>``. stdin is closed (Codex otherwise waits on it).
The profile's ``config_dir`` becomes ``CODEX_HOME`` (one account per profile); analytics,
plugins and the update check are always off, so Codex calls no one but the model.

The parser judges the attempt from the stream's end markers, ``turn.completed`` and
``turn.failed``. Codex retries a server that refuses connections forever, printing
"Reconnecting... waiting for network" with a growing pause: after
:data:`RECONNECT_LIMIT` such lines in a row the parser reports a network error marked
``stop`` so the supervisor ends the process.

Failures end fast: for a model provider defined in ``$CODEX_HOME/config.toml`` (the one
``model_provider`` names) Codex's own retries are bounded with ``-c
model_providers.<id>.request_max_retries`` and ``stream_max_retries`` (default
:data:`MAX_RETRIES`, ``profile.options["max_retries"]`` to change it) unless the file sets them.
Built-in providers cannot be changed this way. A ``CODEX_HOME`` inside the temp folder is
refused before launch (:mod:`baton.agents.preflight`).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from baton.agents import effort, preflight
from baton.agents.base import Launch, Turn
from baton.agents.classify import classify
from baton.agents.stream import clip, json_object, relative, unparsed
from baton.agents.worker_mcp import WorkerMcp, for_codex
from baton.config.profiles import Profile
from baton.core import events
from baton.core.events import Event, EventType
from baton.core.usage import Usage

#: Flags that stop Codex calling home (analytics, plugin sync from GitHub, update check).
QUIET_ARGS = (
    "-c",
    "analytics.enabled=false",
    "-c",
    "check_for_update_on_startup=false",
    "--disable",
    "plugins",
)

#: Codex's own retries per request and per stream, for a provider of the user's config.toml.
MAX_RETRIES = 1

#: "waiting for network" lines in a row before the parser gives up on a dead server.
RECONNECT_LIMIT = 3
#: Prompts longer than this go on stdin (``-``) instead of argv (Linux caps one arg at 128 KiB).
ARGV_PROMPT_LIMIT = 100_000
#: How much of a command's output a ``tool_result`` event keeps.
OUTPUT_CHARS = 2000

_RECONNECTING = "Reconnecting..."
_WAITING = "waiting for network"


def git_root(path: str) -> str | None:
    """The nearest folder above ``path`` holding ``.git`` (a folder, or a worktree's file)."""
    folder = os.path.dirname(path)
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


class CodexParser:
    """Maps ``codex exec --json`` lines to Baton's events."""

    def __init__(self, cwd: str | None = None, reconnect_limit: int | None = None) -> None:
        self.cwd = cwd  # for relative paths; else paths are made relative to their git root
        self.reconnect_limit = reconnect_limit or RECONNECT_LIMIT
        self.ended = False
        self.session_id: str | None = None
        self._waiting = 0  # "waiting for network" lines in a row
        self._error = ""  # the last non-retry error message
        self._answer = ""  # the last agent message
        self._replay = False  # the stream was retried: the next message may repeat the last
        self._started: set[str] = set()  # items whose tool event was emitted

    def feed(self, line: str) -> list[Event]:
        obj = json_object(line)
        if obj is None:
            return unparsed(line, "unparsed")
        kind = obj.get("type")
        if kind != "error" or _WAITING not in str(obj.get("message", "")):
            self._waiting = 0
        match kind:
            case "thread.started":
                sid = str(obj.get("thread_id") or "")
                if not sid or sid == self.session_id:
                    return []
                self.session_id = sid
                return [Event(EventType.SESSION, {"id": sid})]
            case "item.started" | "item.updated":
                return self._item(obj.get("item") or {}, done=False)
            case "item.completed":
                return self._item(obj.get("item") or {}, done=True)
            case "turn.completed":
                return self._completed(obj)
            case "turn.failed":
                error = obj.get("error") or {}
                message = str(error.get("message") or "") if isinstance(error, dict) else ""
                return self._failed(message or self._error or "the turn failed")
            case "error":
                return self._error_line(str(obj.get("message") or ""))
            case _:
                return []

    # -- items -----------------------------------------------------------------------------

    def _item(self, item: dict[str, Any], *, done: bool) -> list[Event]:
        iid = str(item.get("id") or "")
        match item.get("type"):
            case "agent_message":
                return self._message(str(item.get("text") or "")) if done else []
            case "file_change":
                return self._tool(iid, item, done, "apply_patch", self._changes(item))
            case "command_execution":
                return self._tool(iid, item, done, "shell", [])
            case "mcp_tool_call":
                name = f"{item.get('server', 'mcp')}.{item.get('tool', 'tool')}"
                return self._tool(iid, item, done, name, [])
            case "web_search":
                return self._tool(iid, item, done, "web_search", [])
            case "todo_list":
                entries = [
                    {
                        "text": str(e.get("text") or ""),
                        "status": "completed" if e.get("completed") else "pending",
                    }
                    for e in item.get("items") or []
                    if isinstance(e, dict)
                ]
                return [Event(EventType.PLAN, {"entries": entries})]
            case "error":
                message = str(item.get("message") or "")
                return [Event(EventType.LOG, {"level": "warning", "message": message})]
            case _:
                return []

    def _message(self, text: str) -> list[Event]:
        previous, replay = self._answer, self._replay
        self._answer, self._replay = text, False
        if replay and previous and text.startswith(previous):
            # The retried stream repeats what was already shown: only the rest is new.
            rest = text[len(previous) :]
            return [events.text(rest, delta=True)] if rest else []
        return [events.text(text)] if text else []

    def _changes(self, item: dict[str, Any]) -> list[tuple[str, str]]:
        changes = item.get("changes") or []
        return [
            (str(c.get("kind") or "update"), self._relative(str(c.get("path") or "")))
            for c in changes
            if isinstance(c, dict) and c.get("path")
        ]

    def _relative(self, path: str) -> str:
        if self.cwd:
            return relative(path, self.cwd)
        root = git_root(path) if os.path.isabs(path) else None
        return relative(path, root)

    def _tool(
        self,
        iid: str,
        item: dict[str, Any],
        done: bool,
        name: str,
        changes: list[tuple[str, str]],
    ) -> list[Event]:
        self._replay = False
        out: list[Event] = []
        files = [path for _, path in changes]
        if iid not in self._started:
            self._started.add(iid)
            if changes:
                summary = ", ".join(f"{kind} {path}" for kind, path in changes)
            else:
                summary = str(item.get("command") or item.get("query") or "")
            data = {"name": name, "input": clip(summary, 200), "files": files}
            out.append(Event(EventType.TOOL, data))
        if done:
            status = str(item.get("status") or "")
            exit_code = item.get("exit_code")
            ok = status == "completed" and exit_code in (None, 0)
            output = str(item.get("aggregated_output") or "")
            if not output and item.get("error"):
                output = str(item.get("error"))
            result = {"name": name, "ok": ok, "output": clip(output, OUTPUT_CHARS)}
            out.append(Event(EventType.TOOL_RESULT, result))
        return out

    # -- errors and the end ----------------------------------------------------------------

    def _error_line(self, message: str) -> list[Event]:
        if not message.startswith(_RECONNECTING):
            self._error = message
            return []
        self._replay = True
        log = Event(EventType.LOG, {"level": "warning", "message": f"Codex: {message}"})
        if _WAITING not in message:
            return [log]
        self._waiting += 1
        if self._waiting < self.reconnect_limit or self.ended:
            return [log]
        self.ended = True
        text = (
            f"Codex cannot reach the model server ({self._waiting} reconnect attempts in a row,"
            f" it would retry forever): {message}"
        )
        return [log, events.error("network", text, stop=True)]

    def _failed(self, message: str) -> list[Event]:
        if self.ended:
            return []
        self.ended = True
        found = classify(message)
        return [
            events.error(
                str(found.kind),
                message,
                retry_after=found.retry_after,
                resets_at=found.resets_at,
            )
        ]

    def _completed(self, obj: dict[str, Any]) -> list[Event]:
        out: list[Event] = []
        usage = obj.get("usage")
        if isinstance(usage, dict):
            # Codex counts cached input inside input_tokens and reasoning inside
            # output_tokens (as OpenAI bills them), and reports no cost. Its numbers are the
            # thread's totals: a resumed thread's include the earlier turns (``of``).
            cached = int(usage.get("cached_input_tokens") or 0)
            used = Usage.of(
                input=int(usage.get("input_tokens") or 0) - cached,
                cached_input=cached,
                output=usage.get("output_tokens"),
                reasoning=usage.get("reasoning_output_tokens"),
            )
            out.append(Event(EventType.USAGE, {**used.to_json(), "of": "session"}))
        if not self.ended:
            self.ended = True
            out.append(Event(EventType.FINAL, {"text": self._answer}))
        return out

    def finish(self, exit_code: int | None, stderr_tail: str) -> list[Event]:
        if self.ended:
            return []
        detail = self._error or _last_lines(stderr_tail)
        how = f"exit code {exit_code}" if exit_code is not None else "an unknown exit status"
        events_ = self._failed(f"Codex stopped with {how} before the turn ended: {detail}")
        return [dict_merge(e, exit_code=exit_code) for e in events_]


def _last_lines(text: str, keep: int = 5) -> str:
    lines = [
        line
        for line in text.strip().splitlines()
        if line.strip() and not line.startswith("Reading additional input from stdin")
    ]
    return "\n".join(lines[-keep:]) or "no output"


def dict_merge(event: Event, **extra: Any) -> Event:
    return Event(event.type, {**event.data, **extra})


class CodexAdapter:
    """Provider ``codex``: the Codex CLI, headless.

    ``profile.options`` may set ``sandbox`` (default ``workspace-write``), ``config``
    (a dict of extra ``-c key=value`` overrides, values as TOML) and ``extra_args``.
    """

    provider = "codex"

    def launch(self, turn: Turn, profile: Profile) -> Launch:
        opts = profile.options
        argv = [profile.binary or "codex", "exec", "--json", *QUIET_ARGS]
        argv += ["-s", str(opts.get("sandbox") or "workspace-write")]
        argv += ["-c", 'approval_policy="never"', "--skip-git-repo-check", "-C", turn.cwd]
        config = opts.get("config")
        if isinstance(config, dict):
            for key, value in config.items():
                argv += ["-c", f"{key}={value}"]
        model = turn.model or profile.model
        if model:
            argv += ["-m", model]
        argv += effort.codex_args(turn.effort)
        extra = opts.get("extra_args")
        if isinstance(extra, list):
            argv += [str(a) for a in extra]
        if turn.session_id:
            argv += ["resume", turn.session_id]
        stdin: str | None = None
        if len(turn.prompt.encode()) > ARGV_PROMPT_LIMIT:
            argv.append("-")
            stdin = turn.prompt
        else:
            argv += ["--", turn.prompt]  # "--": a prompt may start with "-"
        env = dict(profile.env)
        if profile.config_dir:
            env["CODEX_HOME"] = os.path.expanduser(profile.config_dir)
        inherited = {**os.environ, **env}
        preflight.refuse(profile, inherited)  # e.g. CODEX_HOME in the temp folder
        retries = int(opts.get("max_retries", MAX_RETRIES))
        bounds = retry_bounds(preflight.codex_home(profile, inherited), retries)
        if bounds:
            at = argv.index("exec") + 1
            argv[at:at] = bounds
        notes: tuple[str, ...] = ()
        plan = WorkerMcp.of(profile)
        if plan is not None:
            applied = for_codex(plan, preflight.codex_home(profile, inherited), turn.cwd)
            at = argv.index("exec") + 1
            argv[at:at] = applied.argv
            notes = applied.notes
        confined = None
        if not opts.get("sandbox"):
            # Codex's own sandbox cannot start inside Baton's (its writes then fail): when
            # Baton confines the agent, that sandbox is the boundary.
            confined = list(argv)
            confined[confined.index("-s") + 1] = "danger-full-access"
        return Launch(
            argv=argv, env=env, cwd=turn.cwd, stdin=stdin, confined_argv=confined, notes=notes
        )

    def parser(self) -> CodexParser:
        return CodexParser()


def retry_bounds(home: Path, retries: int) -> list[str]:
    """``-c`` overrides bounding the retries of the provider ``home/config.toml`` selects,
    for the bounds the file does not set itself; none for a built-in provider."""
    try:
        config = tomllib.loads((home / "config.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    chosen = config.get("model_provider")
    providers = config.get("model_providers")
    if not isinstance(chosen, str) or not isinstance(providers, dict):
        return []
    table = providers.get(chosen)
    if not isinstance(table, dict):
        return []
    out: list[str] = []
    for key in ("request_max_retries", "stream_max_retries"):
        if key not in table:
            out += ["-c", f"model_providers.{chosen}.{key}={retries}"]
    return out
