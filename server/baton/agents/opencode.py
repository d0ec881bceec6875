"""OpenCode (provider ``opencode``): ``opencode run --format json``, one process per turn.

The prompt goes on stdin, never in argv: ``opencode run`` reads piped stdin as the message (no
128 KiB argv limit, not visible in ``ps``), byte for byte — whereas message *arguments* are
re-joined with every one containing a space wrapped in double quotes and its own quotes
backslash-escaped, which is what the model would see.

A later turn resumes the session with ``--session <ses_…>`` in the same worktree. ``--auto``
approves what the user's config does not explicitly deny (the worker edits Baton's private
worktree, and nobody could answer a prompt). ``--title`` spares the extra title request.
The profile's ``config_dir`` becomes ``OPENCODE_CONFIG_DIR`` (an extra config folder per account:
its ``opencode.json`` names providers, models and keys); ``profile.env`` is passed through, so
``XDG_*`` or ``OPENCODE_CONFIG_CONTENT`` there work too.

Calling home: auto-update, the models.dev fetch, LSP downloads, sharing and the default plugins
are switched off by env. OpenCode also npm-installs ``@opencode-ai/plugin`` into every config
folder whose ``node_modules``/``package-lock.json`` do not list it yet; :func:`seed_config_dir`
pre-fills a *pristine* folder (neither exists) so that install is never attempted.

The stream has no end marker of its own: a run succeeded when its last ``step_finish`` says
``stop``; an ``error`` line says why it failed. Two documented hangs show in the stream and are
caught by the parser, which reports a network error marked ``stop`` (the supervisor then ends
the process): a model stream that keeps ending without a finish reason (``reason: "unknown"``,
retried at once, forever) and a stream that keeps breaking (a new ``step_start`` with no
``step_finish``, retried with backoff, forever). A server that answers 500 or not at all makes
OpenCode retry with backoff (2, 4, 8, 16, 30 s: over a minute) and print nothing on stdout,
and it has no setting to bound that. So Baton starts it with ``--print-logs --log-level ERROR``:
each failed model request is then a ``stream error`` line on stderr, which the parser reads
too (:class:`~baton.agents.base.StderrReader`); :data:`MAX_FAILURES` of them in a row with
no progress on stdout between them end the attempt with OpenCode's own error (a 500 is a
``worker_error``, a server that cannot be reached ``network``). A rate limit is left to
OpenCode: it waits as the server said, then reports it on stdout with the reset time.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from baton.agents.base import Launch, Turn
from baton.agents.classify import classify
from baton.agents.stream import as_dict, clip, json_object, relative, unparsed
from baton.agents.worker_mcp import WorkerMcp, for_opencode
from baton.config.profiles import Profile
from baton.core import events
from baton.core.events import Event, EventType
from baton.core.lifecycle import Completion
from baton.core.usage import Usage

#: Env switches that stop OpenCode calling home (and reading Claude Code's files).
QUIET_ENV: dict[str, str] = {
    f"OPENCODE_DISABLE_{name}": "1"
    for name in (
        "AUTOUPDATE",
        "MODELS_FETCH",
        "LSP_DOWNLOAD",
        "SHARE",
        "DEFAULT_PLUGINS",
        "CLAUDE_CODE",
    )
}
#: The package OpenCode installs into each config folder unless it is already listed there.
PLUGIN_PACKAGE = "@opencode-ai/plugin"
#: Failed model attempts in a row (cut streams, or ends without a finish reason) before the
#: parser calls it a loop and asks for the process to be stopped.
LOOP_LIMIT = 3
#: Failed model requests in a row (the first and OpenCode's retries, about 7 s apart in all)
#: with no progress on stdout before the parser ends the attempt.
MAX_FAILURES = 3
#: The flags that make OpenCode log each failed model request on stderr (and nothing below
#: an error).
LOG_FLAGS = ("--print-logs", "--log-level", "ERROR")
#: A logged failure of a model request; its ``error.error`` field says what failed.
_STREAM_ERROR = re.compile(r'\bmessage="stream error"')
_LOGGED_ERROR = re.compile(r'\berror\.error="((?:[^"\\]|\\.)*)"')
_LOGGED_AT = re.compile(r"^timestamp=(\S+)")
#: How much of a tool's output a ``tool_result`` event keeps; how long a tool input summary is.
OUTPUT_CHARS = 2000
INPUT_CHARS = 200
#: Tool input keys that name a file.
PATH_KEYS = ("filePath", "path", "file_path")


def seed_config_dir(folder: Path) -> bool:
    """Pre-fill a pristine OpenCode config folder so OpenCode does not npm-install its plugin.

    Only a folder with neither ``node_modules`` nor ``package-lock.json`` is touched (a folder
    the user set up is left alone). Returns whether anything was written.
    """
    lock = folder / "package-lock.json"
    modules = folder / "node_modules"
    if lock.exists() or modules.exists():
        return False
    modules.mkdir(parents=True, exist_ok=True)
    deps = {"dependencies": {PLUGIN_PACKAGE: "*"}}
    lock.write_text(json.dumps({"lockfileVersion": 3, "packages": {"": deps}}), encoding="utf-8")
    return True


def config_dirs(env: Mapping[str, str]) -> list[Path]:
    """The config folders OpenCode will load (and install its plugin into) under ``env``."""
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or str(Path.home()), ".config")
    found = [Path(xdg) / "opencode"]
    if env.get("OPENCODE_CONFIG_DIR"):
        found.append(Path(env["OPENCODE_CONFIG_DIR"]))
    return found


class OpenCodeParser:
    """Maps ``opencode run --format json`` lines (and its logged failures) to Baton's events."""

    def __init__(
        self, cwd: str | None = None, loop_limit: int = LOOP_LIMIT, max_failures: int = MAX_FAILURES
    ) -> None:
        self.cwd = cwd
        self.loop_limit = loop_limit
        self.max_failures = max_failures
        self.session_id: str | None = None
        self.ended = False  # an error (or the loop watchdog) has spoken
        self._open_step = False  # a step_start without its step_finish
        self._broken = 0  # step_starts in a row whose stream broke (no step_finish)
        self._unfinished = 0  # step_finish with reason "unknown" in a row
        self._last_reason: str | None = None
        self._answer = ""  # the last text part
        self._usage = Usage()  # the running total of the steps' usage
        self._progress_at = 0.0  # epoch seconds of the last stdout event
        self._failures: list[tuple[float, str]] = []  # logged failures: (epoch s, error)

    def feed(self, line: str) -> list[Event]:
        obj = json_object(line)
        if obj is None:
            return unparsed(line, "opencode", "info")
        out: list[Event] = []
        sid = obj.get("sessionID")
        if isinstance(sid, str) and sid and sid != self.session_id:
            self.session_id = sid
            out.append(Event(EventType.SESSION, {"id": sid}))
        at = obj.get("timestamp")
        if isinstance(at, int | float):
            self._progress_at = max(self._progress_at, at / 1000)
        part = as_dict(obj.get("part"))
        match obj.get("type"):
            case "step_start":
                out += self._step_start()
            case "step_finish":
                out += self._step_finish(part)
            case "text":
                out += self._text(part)
            case "tool_use":
                out += self._tool(part)
            case "error":
                out += self._error(obj.get("error"))
            case _:
                pass
        return out

    def _step_start(self) -> list[Event]:
        if self._open_step:  # the previous attempt's stream broke; OpenCode retries it
            self._broken += 1
            if self._broken + 1 >= self.loop_limit and not self.ended:
                self.ended = True
                message = (
                    f"the model's stream broke off {self._broken + 1} times in a row "
                    "(OpenCode retries such a stream forever); is the model server reachable?"
                )
                return [events.error("network", message, stop=True)]
        self._open_step = True
        return []

    def _step_finish(self, part: dict[str, Any]) -> list[Event]:
        self._open_step = False
        self._broken = 0
        reason = str(part.get("reason") or "unknown")
        self._last_reason = reason
        out = self._usage_event(part)
        if reason != "unknown":
            self._unfinished = 0
            return out
        self._unfinished += 1
        if self._unfinished >= self.loop_limit and not self.ended:
            self.ended = True
            message = (
                f"the model's stream ended without a finish reason {self._unfinished} times in "
                "a row (OpenCode calls the model again at once, forever); the answer is truncated"
            )
            out.append(events.error("network", message, stop=True))
        return out

    def _usage_event(self, part: dict[str, Any]) -> list[Event]:
        tokens = part.get("tokens")
        if not isinstance(tokens, dict):
            return []
        # OpenCode counts cache reads and writes apart from input, and reasoning apart from
        # output; its cost is 0 for a model it knows no price of (then Baton estimates).
        cache = as_dict(tokens.get("cache"))
        reasoning = int(tokens.get("reasoning") or 0)
        cost = part.get("cost")
        step = Usage.of(
            input=int(tokens.get("input") or 0) + int(cache.get("write") or 0),
            cached_input=cache.get("read"),
            output=int(tokens.get("output") or 0) + reasoning,
            reasoning=reasoning,
            cost=cost if isinstance(cost, int | float) and cost > 0 else None,
        )
        self._usage = self._usage + step
        return [Event(EventType.USAGE, self._usage.to_json())]

    def _text(self, part: dict[str, Any]) -> list[Event]:
        text = str(part.get("text") or "")
        # A step that ended without a finish reason is retried whole: the same text again.
        if self._last_reason == "unknown" and text == self._answer:
            return []
        self._answer = text
        return [events.text(text)] if text else []

    def _tool(self, part: dict[str, Any]) -> list[Event]:
        name = str(part.get("tool") or "tool")
        state = as_dict(part.get("state"))
        args = as_dict(state.get("input"))
        files = [
            relative(str(args[k]), self.cwd, find_root=True)
            for k in PATH_KEYS
            if isinstance(args.get(k), str)
        ]
        summary = files[0] if files else str(args.get("command") or args.get("pattern") or "")
        if not summary and args:
            summary = json.dumps(args)
        status = str(state.get("status") or "")
        output = state.get("output") if status == "completed" else state.get("error")
        return [
            Event(
                EventType.TOOL, {"name": name, "input": clip(summary, INPUT_CHARS), "files": files}
            ),
            Event(
                EventType.TOOL_RESULT,
                {
                    "name": name,
                    "ok": status == "completed",
                    "output": clip(str(output or ""), OUTPUT_CHARS),
                },
            ),
        ]

    def _error(self, error: object) -> list[Event]:
        if self.ended:
            return []
        self.ended = True
        err = error if isinstance(error, dict) else {}
        data = as_dict(err.get("data"))
        name = str(err.get("name") or "error")
        message = str(data.get("message") or err.get("message") or name)
        status = data.get("statusCode")
        found = classify(f"{name}: {message}", status=status if isinstance(status, int) else None)
        retry_after = found.retry_after
        headers = data.get("responseHeaders")
        if retry_after is None and found.resets_at is None and isinstance(headers, dict):
            try:
                retry_after = float(headers.get("retry-after", ""))
            except ValueError:
                pass
        extra: dict[str, Any] = {"retry_after": retry_after, "resets_at": found.resets_at}
        if isinstance(status, int):
            extra["status"] = status
            message = f"{status} {message}"
        return [events.error(str(found.kind), message, **extra)]

    def feed_stderr(self, line: str) -> list[Event]:
        """Count OpenCode's logged model failures; :data:`MAX_FAILURES` in a row with no
        progress on stdout since end the attempt with the last one's error."""
        if self.ended or not _STREAM_ERROR.search(line) or " small=true" in line:
            return []
        found = _LOGGED_ERROR.search(line)
        error = found.group(1).replace('\\"', '"') if found else "the model request failed"
        kind = classify(error).kind
        if kind == Completion.RATE_LIMIT:
            # OpenCode waits as the server said and then reports it on stdout, with the
            # reset time its log line lacks.
            return []
        self._failures.append((_logged_at(line), error))
        # Stdout and stderr are read apart: only failures logged after the last progress count.
        recent = [f for f in self._failures if f[0] >= self._progress_at]
        if len(recent) < self.max_failures:
            return []
        self.ended = True
        message = (
            f"{clip(error, 500)} ({len(recent)} model requests in a row failed; OpenCode "
            "retries for over a minute, Baton stopped it)"
        )
        return [events.error(str(kind), message, stop=True)]

    def finish(self, exit_code: int | None, stderr_tail: str) -> list[Event]:
        if self.ended:
            return []
        self.ended = True
        if self._last_reason == "stop" and not self._open_step:
            return [Event(EventType.FINAL, {"text": self._answer})]
        how = f"exit code {exit_code}" if exit_code is not None else "an unknown exit status"
        if self._last_reason is None and not self._open_step:
            message = f"OpenCode stopped with {how} before the model answered"
        else:
            message = f"OpenCode stopped with {how} before the model finished its answer"
        tail = stderr_tail.strip()
        if tail:
            message += ": " + clip(tail.splitlines()[-1], 500)
        kind = classify(tail).kind if tail else "worker_error"
        return [events.error(str(kind), message, exit_code=exit_code)]


def _logged_at(line: str) -> float:
    """The epoch seconds of an OpenCode log line (now, when it has no readable time)."""
    found = _LOGGED_AT.match(line)
    if found:
        try:
            return datetime.fromisoformat(found.group(1).replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return datetime.now().timestamp()


class OpenCodeAdapter:
    """Provider ``opencode``: ``opencode run --format json --auto [-m …] [--session …]``.

    The prompt goes on stdin.
    """

    provider = "opencode"

    def launch(self, turn: Turn, profile: Profile) -> Launch:
        env = dict(profile.env)
        if profile.config_dir:
            env["OPENCODE_CONFIG_DIR"] = profile.config_dir
        env.update(QUIET_ENV)
        for folder in config_dirs({**os.environ, **env}):
            seed_config_dir(folder)
        plan = WorkerMcp.of(profile)
        notes: tuple[str, ...] = ()
        if plan is not None:
            applied = for_opencode(plan, {**os.environ, **env}, turn.cwd)
            env.update(applied.env)
            notes = applied.notes
        argv = [profile.binary or "opencode", "run", "--format", "json", "--auto", *LOG_FLAGS]
        model = turn.model or profile.model
        if model:
            argv += ["-m", model]
        if turn.session_id:
            argv += ["--session", turn.session_id]
        else:
            argv.append(f"--title=Baton task {turn.task_id}")
        return Launch(argv=argv, env=env, cwd=turn.cwd, stdin=turn.prompt, notes=notes)

    def parser(self) -> OpenCodeParser:
        return OpenCodeParser()
