"""Gemini CLI (provider ``gemini``): ``gemini --output-format stream-json --prompt=`` + stdin.

The prompt goes on stdin (no 128 KiB argv limit, not visible in ``ps``): headless Gemini reads
piped stdin and puts it before the ``--prompt`` text, which is left empty, so the model gets the
prompt byte for byte as ``--prompt=<prompt>`` would give it. Gemini reads at most 8 MiB from
stdin and silently drops the rest, so a larger prompt is refused before anything starts
(:class:`PromptTooLarge`).

One process per turn; a later turn resumes with ``--resume <session_id>`` from the same worktree.
``--approval-mode yolo`` lets the worker edit Baton's private worktree (nobody could answer an
approval prompt headless); the workspace is trusted (``--skip-trust``). ``-m`` is always worth
giving: without it Gemini routes through an extra classifier call. The profile's ``config_dir``
becomes ``GEMINI_CLI_HOME`` (the folder holding an account's ``.gemini/``); ``profile.env`` is
passed through (``GEMINI_API_KEY``, ``GOOGLE_GEMINI_BASE_URL``…).

Calling home: usage statistics, telemetry and the auto-updater are switched off in a
*system* settings file Baton writes into the task's folder (``GEMINI_CLI_SYSTEM_SETTINGS_PATH``;
system settings win over the user's, and an existing system file is merged in), plus
``GEMINI_TELEMETRY_ENABLED=false``.

Failures end fast: the same system settings bound Gemini's own retries
(``general.maxAttempts``, default :data:`MAX_ATTEMPTS`, ``profile.options["max_attempts"]`` to
change it; Gemini's default is 10, about five minutes on a rate limit). A resumed session Gemini
no longer has ("No previous sessions found", exit 42) ends in an error event marked
``session_lost`` (see :func:`baton.agents.stream.session_lost`). Gemini skips a system settings
file unless it and every folder above it belong to root and no one else may write to them
("Parent directory '/tmp' is insecure"; any folder in a user's home fails too), which would
leave usage statistics on and retries unbounded: :func:`skipped_reason` finds that before
launch, and Baton then gives Gemini a private ``GEMINI_CLI_HOME`` in the task's folder whose
user settings carry the same values (:func:`overlay_home`; the account's logins and chats are
linked into it, so sessions resume).

The stream's end marker is ``result``: ``status: "success"`` or ``"error"`` — never the exit
code (a stream that ends without a finish reason exits 0 with ``status: "error"``). Gemini
retries a broken stream and re-sends the same text deltas, without a marker in between:
:class:`TextReplay` keeps the repeat from being shown twice.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from baton.agents.base import Launch, Turn
from baton.agents.classify import classify, structured_status
from baton.agents.stream import as_dict, clip, json_object, relative, session_lost, unparsed
from baton.agents.worker_mcp import WorkerMcp, for_gemini
from baton.config.profiles import Profile
from baton.core import events
from baton.core.events import Event, EventType
from baton.core.usage import Usage
from baton.errors import InvalidInput

#: Settings Baton forces (as system settings) so Gemini calls no one but the model.
QUIET_SETTINGS: dict[str, Any] = {
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}
QUIET_ENV = {"GEMINI_TELEMETRY_ENABLED": "false", "GEMINI_CLI_TRUST_WORKSPACE": "true"}
DEFAULT_SYSTEM_SETTINGS = Path("/etc/gemini-cli/settings.json")
#: Gemini's own attempts per API request (Baton's default; Gemini's is 10).
MAX_ATTEMPTS = 2
OUTPUT_CHARS = 2000
INPUT_CHARS = 200
PATH_KEYS = ("file_path", "absolute_path", "path", "dir_path")
#: Gemini CLI 0.61 reads at most this many bytes of stdin (``readStdin``'s MAX_STDIN_SIZE).
STDIN_LIMIT = 8 * 1024 * 1024
_API_ERROR = re.compile(r"^\[API Error: (?P<body>.*)\](?P<rest>.*)$", re.S)


class PromptTooLarge(InvalidInput, OSError):
    """The prompt is larger than the CLI can take; nothing was started.

    An :class:`OSError` so the supervisor fails the task with this message, like a failed spawn.
    """


def skipped_reason(path: Path) -> str | None:
    """Why Gemini would skip ``path`` as a system settings file, or None when it reads it.

    Gemini (0.61) reads a system file only when the file and every folder above it are owned
    by root and writable by no group or other user; else it warns "Security Warning: Skipping
    system settings file … Parent directory … is insecure" and goes on without it.
    """
    for item in (*reversed(path.parents), path):
        try:
            st = item.stat()
        except FileNotFoundError:
            continue
        except OSError as exc:
            return f"{item} cannot be read ({exc.strerror})"
        if st.st_uid != 0:
            return f"{item} is not owned by root"
        if st.st_mode & 0o022:
            return f"{item} is writable by group or others"
    return None


def account_home(profile: Profile, env: dict[str, str]) -> Path:
    """The folder holding the account's ``.gemini/`` (GEMINI_CLI_HOME, else HOME)."""
    raw = profile.config_dir or env.get("GEMINI_CLI_HOME") or env.get("HOME") or str(Path.home())
    return Path(os.path.expanduser(raw))


def overlay_home(account: Path, folder: Path, forced: dict[str, Any]) -> Path:
    """A private GEMINI_CLI_HOME in ``folder`` whose ``.gemini/`` links every entry of the
    account's (logins, chats, projects) except ``settings.json``, which is the account's
    settings with ``forced`` merged over them (as system settings would be)."""
    source = account / ".gemini"
    (source / "tmp").mkdir(parents=True, exist_ok=True)  # chats: shared, so resume works
    home = folder / "gemini-home"
    dot = home / ".gemini"
    dot.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        link = dot / entry.name
        if entry.name != "settings.json" and not link.is_symlink() and not link.exists():
            link.symlink_to(entry)
    (dot / "settings.json").write_text(
        json.dumps(_merged(source / "settings.json", forced), indent=2), encoding="utf-8"
    )
    return home


def _merged(current: Path, forced: dict[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    try:
        loaded = json.loads(current.read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            merged = loaded
    except (OSError, ValueError):
        pass
    for section, values in forced.items():
        base = merged.get(section)
        merged[section] = {**(base if isinstance(base, dict) else {}), **values}
    return merged


class TextReplay:
    """Streamed text as shown to the user, so a retried stream's repeat is not shown twice.

    ``shown`` is the text of the current block so far. After :meth:`restart` (or, when
    ``detect`` is on, when a delta equals the block's first delta again — a retry that the
    stream does not mark), deltas that only repeat ``shown`` are swallowed; from the first
    delta that goes beyond it, text flows again. :meth:`boundary` starts a new block (a tool
    call came in between).
    """

    def __init__(self, detect: bool = False) -> None:
        self.detect = detect
        self.shown = ""
        self._first = ""
        self._replay: int | None = None  # position in ``shown`` the retried stream has reached
        self._guessed = False  # the replay was inferred from a repeated first delta

    def boundary(self) -> None:
        self.shown, self._first, self._replay = "", "", None

    def restart(self) -> None:
        if self.shown:
            self._replay, self._guessed = 0, False

    def feed(self, delta: str) -> str:
        """The part of ``delta`` to show (may be empty)."""
        if not delta:
            return ""
        if self._replay is None and self.detect and self.shown and delta == self._first:
            self._replay, self._guessed = 0, True
        if self._replay is not None:
            pos = self._replay
            if self.shown.startswith(delta, pos):
                self._replay = pos + len(delta)
                return ""
            self._replay = None
            if pos < len(self.shown):
                if self._guessed:  # not a retry after all: the swallowed text was new text
                    delta = self.shown[:pos] + delta
                else:  # the retry went another way: its text from here on is the answer
                    self.shown = self.shown[:pos]
        if not self.shown:
            self._first = delta
        self.shown += delta
        return delta


def api_error(message: str) -> tuple[str, int | None]:
    """Gemini's ``[API Error: …]`` message unwrapped: the server's message and HTTP code."""
    m = _API_ERROR.match(message.strip())
    if not m:
        return message, None
    body, rest = m.group("body"), m.group("rest").strip()
    try:
        obj = json.loads(body)
    except ValueError:
        obj = None
    if isinstance(obj, dict) and isinstance(obj.get("error"), dict):
        err = obj["error"]
        code = err.get("code")
        text = str(err.get("message") or body)
        return text, code if isinstance(code, int) else None
    return (f"{body} ({rest})" if rest else body), None


class GeminiParser:
    """Maps ``gemini --output-format stream-json`` lines to Baton's events."""

    def __init__(self, cwd: str | None = None) -> None:
        self.cwd = cwd
        self.ended = False
        self.session_id: str | None = None
        self.text = TextReplay(detect=True)
        self._answer = ""  # assistant text since the last tool call
        self._error = ""  # the last error-severity message
        self._tools: dict[str, str] = {}  # tool_id → name
        self._pending: Event | None = None  # the session, until the model has answered

    def feed(self, line: str) -> list[Event]:
        obj = json_object(line)
        if obj is None:
            return unparsed(line, "gemini", "info")
        match obj.get("type"):
            case "init":
                # Announced only once the model answered: a session that failed before that
                # (a rate limit on the first request) is not kept by Gemini, and resuming it
                # fails ("No previous sessions found"); the retry then starts afresh.
                self.session_id = str(obj.get("session_id") or "") or None
                data = {"id": self.session_id, "model": obj.get("model")}
                self._pending = Event(EventType.SESSION, data) if self.session_id else None
                return []
            case "message" if obj.get("role") == "assistant":
                shown = self.text.feed(str(obj.get("content") or ""))
                self._answer = self.text.shown
                return self._session() + ([events.text(shown, delta=True)] if shown else [])
            case "tool_use":
                return self._session() + self._tool_use(obj)
            case "tool_result":
                return self._tool_result(obj)
            case "error":
                message = str(obj.get("message") or "")
                if obj.get("severity") == "error":
                    self._error = message
                    return []
                return [Event(EventType.LOG, {"level": "warning", "message": message})]
            case "result":
                return self._result(obj)
            case _:
                return []

    def _session(self) -> list[Event]:
        pending, self._pending = self._pending, None
        return [pending] if pending is not None else []

    def _tool_use(self, obj: dict[str, Any]) -> list[Event]:
        self.text.boundary()
        self._answer = ""
        name = str(obj.get("tool_name") or "tool")
        self._tools[str(obj.get("tool_id"))] = name
        args = as_dict(obj.get("parameters"))
        files = [
            relative(str(args[k]), self.cwd, find_root=True)
            for k in PATH_KEYS
            if isinstance(args.get(k), str)
        ]
        summary = files[0] if files else str(args.get("command") or args.get("pattern") or "")
        if not summary and args:
            summary = json.dumps(args)
        data = {"name": name, "input": clip(summary, INPUT_CHARS), "files": files[:1]}
        return [Event(EventType.TOOL, data)]

    def _tool_result(self, obj: dict[str, Any]) -> list[Event]:
        name = self._tools.get(str(obj.get("tool_id")), "tool")
        err = as_dict(obj.get("error"))
        output = obj.get("output") or err.get("message") or ""
        data = {
            "name": name,
            "ok": obj.get("status") == "success",
            "output": clip(str(output), OUTPUT_CHARS),
        }
        return [Event(EventType.TOOL_RESULT, data)]

    def _result(self, obj: dict[str, Any]) -> list[Event]:
        if self.ended:
            return []
        self.ended = True
        out: list[Event] = []
        stats = as_dict(obj.get("stats"))
        if stats:
            # Gemini's input_tokens include the cached ones; its ``input`` is the rest.
            cached = int(stats.get("cached") or 0)
            fresh = stats.get("input")
            used = Usage.of(
                input=fresh if fresh is not None else int(stats.get("input_tokens") or 0) - cached,
                cached_input=cached,
                output=stats.get("output_tokens"),
            )
            out.append(Event(EventType.USAGE, used.to_json()))
        if obj.get("status") == "success":
            out = self._session() + out
            out.append(Event(EventType.FINAL, {"text": self._answer.strip()}))
            return out
        err = as_dict(obj.get("error"))
        out.append(self._error_event(str(err.get("message") or self._error)))
        return out

    def _error_event(self, raw: str) -> Event:
        message, status = api_error(raw)
        if not message:
            message = "Gemini reported an error without a message"
        if "without a finish reason" in message or message == "terminated":
            message = f"the model's stream was cut short ({message}); the answer is incomplete"
        if re.search(r"maximum session turns", message, re.I):
            return events.error("max_turns", message)
        found = classify(message, status=status)
        if status is not None:
            message = f"{status} {message}"
        return events.error(
            str(found.kind), message, retry_after=found.retry_after, resets_at=found.resets_at
        )

    def finish(self, exit_code: int | None, stderr_tail: str) -> list[Event]:
        if self.ended:
            return []
        self.ended = True
        how = f"exit code {exit_code}" if exit_code is not None else "an unknown exit status"
        message = f"Gemini stopped with {how} without a result"
        lines = [ln for ln in stderr_tail.strip().splitlines() if ln.strip()]
        if lines:
            message += ": " + clip(lines[-1].strip(), 500)
        lost = session_lost(stderr_tail, message, exit_code=exit_code)
        if lost is not None:
            return [lost]
        status = structured_status(stderr_tail)
        kind = classify(stderr_tail, status=status).kind if lines else "worker_error"
        return [events.error(str(kind), message, exit_code=exit_code, status=status)]


def forced_settings(max_attempts: int = MAX_ATTEMPTS) -> dict[str, Any]:
    """What Baton makes Gemini use, whatever the user's settings say."""
    forced = {k: dict(v) for k, v in QUIET_SETTINGS.items()}
    forced["general"]["maxAttempts"] = max_attempts
    return forced


def system_settings(
    turn: Turn,
    env: dict[str, str],
    max_attempts: int = MAX_ATTEMPTS,
    forced: dict[str, Any] | None = None,
) -> Path:
    """Write the system settings file with :data:`QUIET_SETTINGS` merged over any existing one,
    and Gemini's retries bounded to ``max_attempts`` (or ``forced``, the sections to force)."""
    current = Path(env.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH") or DEFAULT_SYSTEM_SETTINGS)
    merged = _merged(current, forced or forced_settings(max_attempts))
    folder = _task_folder(turn)
    path = folder / "gemini-system-settings.json"
    path.write_text(json.dumps(merged, indent=2), encoding="utf-8")
    return path


def _task_folder(turn: Turn) -> Path:
    folder = Path(turn.task_dir) if turn.task_dir else Path(tempfile.mkdtemp(prefix="baton-"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class GeminiAdapter:
    """Provider ``gemini``: ``gemini --output-format stream-json --approval-mode yolo …``."""

    provider = "gemini"

    def launch(self, turn: Turn, profile: Profile) -> Launch:
        size = len(turn.prompt.encode())
        if size > STDIN_LIMIT:
            raise PromptTooLarge(
                f"the prompt is {size} bytes; Gemini CLI reads at most {STDIN_LIMIT} bytes "
                "(8 MiB) of prompt and would silently cut the rest: make the selection smaller"
            )
        env = dict(profile.env)
        if profile.config_dir:
            env["GEMINI_CLI_HOME"] = profile.config_dir
        env.update(QUIET_ENV)
        inherited = {**os.environ, **env}
        attempts = int(profile.options.get("max_attempts") or MAX_ATTEMPTS)
        forced = forced_settings(attempts)
        notes: tuple[str, ...] = ()
        plan = WorkerMcp.of(profile)
        if plan is not None:
            system = Path(
                inherited.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH") or DEFAULT_SYSTEM_SETTINGS
            )
            applied = for_gemini(plan, account_home(profile, inherited), turn.cwd, system)
            forced.update(applied.settings)
            notes = applied.notes
        settings = system_settings(turn, inherited, attempts, forced)
        writable: tuple[str, ...] = ()
        env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"] = str(settings)
        if skipped_reason(settings) is not None:
            # Gemini would skip that file: give it a private home whose user settings say the
            # same (the account's logins and chats are linked in).
            account = account_home(profile, inherited)
            home = overlay_home(account, _task_folder(turn), forced)
            env["GEMINI_CLI_HOME"] = str(home)
            # In the sandbox: the private home, and the account's folder its links lead to.
            writable = (str(home), str(account / ".gemini"))
        argv = [
            profile.binary or "gemini",
            "--output-format",
            "stream-json",
            "--approval-mode",
            "yolo",
            "--skip-trust",
        ]
        model = turn.model or profile.model
        if model:
            argv += ["-m", model]
        if turn.session_id:
            argv += ["--resume", turn.session_id]
        argv.append("--prompt=")  # headless; the prompt itself comes on stdin
        return Launch(
            argv=argv,
            env=env,
            cwd=turn.cwd,
            stdin=turn.prompt,
            readable=(str(settings),),
            writable=writable,
            notes=notes,
        )

    def parser(self) -> GeminiParser:
        return GeminiParser()
