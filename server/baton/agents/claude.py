"""Claude Code (provider ``claude``): ``claude -p`` with ``--output-format stream-json``.

The prompt goes on stdin (no argv size limit, not visible in ``ps``); the worker runs in
Baton's worktree with ``--permission-mode acceptEdits`` and a list of allowed tools, and a
later turn resumes the session with ``--resume <session_id>``. The profile's ``config_dir``
becomes ``CLAUDE_CONFIG_DIR`` (one account per profile); the switches that stop Claude Code
calling home are always set.

The parser judges the attempt from the stream's own end marker, the ``result`` event: its
``is_error`` flag (never its ``subtype``, which says "success" on API errors), and a
``stop_reason`` of null on a non-error result, which means the answer was cut off. Text
arrives as partial deltas (``--include-partial-messages``); text a retried stream repeats is
not shown twice (see :class:`TextStream`).

Failures end fast: Claude Code's own retries are bounded (``CLAUDE_CODE_MAX_RETRIES``, default
:data:`MAX_RETRIES`, ``profile.options["max_retries"]`` or the profile's env to change it), and
an ``api_retry`` that names an error no retry can cure (``authentication_failed``,
``billing_error``, HTTP 401/402/403) ends the attempt at once: the error event carries
``stop: true``, on which the runtime ends the process.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from baton.agents import effort
from baton.agents.base import Launch, Turn
from baton.agents.classify import classify
from baton.agents.stream import clip, json_object, relative, unparsed
from baton.agents.worker_mcp import WorkerMcp, for_claude
from baton.config.profiles import Profile
from baton.core import events
from baton.core.events import Event, EventType
from baton.core.usage import Usage

#: Environment that stops Claude Code calling home (telemetry, error reports, updates).
QUIET_ENV: dict[str, str] = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
}

#: Claude Code's own retries of a failed API request (its default is 10, ~3 minutes of backoff).
MAX_RETRIES = 2

#: ``api_retry`` errors that retrying cannot cure: the first one ends the attempt.
FINAL_RETRY_ERRORS: dict[str, str] = {
    "authentication_failed": "auth",
    "billing_error": "billing",
}
FINAL_RETRY_STATUS: dict[int, str] = {401: "auth", 403: "auth", 402: "billing"}

#: Tools the worker may use without asking (edits are accepted by the permission mode).
ALLOWED_TOOLS = ("Bash", "Read", "Edit", "MultiEdit", "Write", "Glob", "Grep", "NotebookEdit")

#: Tools whose ``file_path`` / ``notebook_path`` input names a file they touch.
FILE_TOOLS = frozenset({"Read", "Edit", "MultiEdit", "Write", "NotebookEdit"})

#: How much of a tool's output a ``tool_result`` event keeps.
OUTPUT_CHARS = 2000
#: How much of a tool's input the ``tool`` event's summary keeps.
INPUT_CHARS = 200


class TextStream:
    """Text deltas as shown to the user, so a retried stream's repeated text is not shown twice.

    ``visible`` is what the user has seen of the current, unconfirmed block; ``actual`` is what
    the current (maybe restarted) stream has produced. After :meth:`restart`, deltas that only
    repeat ``visible`` are swallowed and just the new part is shown.
    """

    def __init__(self) -> None:
        self.visible = ""
        self.actual = ""

    def delta(self, text: str) -> str:
        """The part of ``text`` (the next delta of the stream) that the user has not seen."""
        if not text:
            return ""
        self.actual += text
        if self.visible.startswith(self.actual):
            return ""
        if self.actual.startswith(self.visible):
            new = self.actual[len(self.visible) :]
            self.visible = self.actual
            return new
        # The retried stream says something else: show it after what is already there.
        self.visible += text
        self.actual = self.visible
        return text

    def restart(self) -> None:
        """A new stream begins while the current block was never confirmed."""
        self.actual = ""

    def block(self, text: str) -> str:
        """A whole block arrived without deltas: the part not shown yet; the block is confirmed."""
        self.restart()
        new = self.delta(text)
        self.commit()
        return new

    def commit(self) -> None:
        """The current block is complete (the model confirmed it)."""
        self.visible = self.actual = ""

    @property
    def pending(self) -> bool:
        return bool(self.visible)


def _usage(result: dict[str, Any]) -> Usage:
    """The tokens of a ``result`` line. ``modelUsage`` (per model, what ``total_cost_usd`` sums)
    is read first: ``usage`` covers only the last request and is all zeros after a retried
    stream, and leaves out other models' calls. Claude counts cache reads apart from input;
    cache writes are billed as input."""
    models = result.get("modelUsage")
    if isinstance(models, dict) and models:
        rows = [m for m in models.values() if isinstance(m, dict)]
        return Usage.of(
            input=sum(
                int(m.get("inputTokens") or 0) + int(m.get("cacheCreationInputTokens") or 0)
                for m in rows
            ),
            cached_input=sum(int(m.get("cacheReadInputTokens") or 0) for m in rows),
            output=sum(int(m.get("outputTokens") or 0) for m in rows),
        )
    raw = result.get("usage")
    usage: dict[str, Any] = raw if isinstance(raw, dict) else {}
    return Usage.of(
        input=int(usage.get("input_tokens") or 0)
        + int(usage.get("cache_creation_input_tokens") or 0),
        cached_input=usage.get("cache_read_input_tokens"),
        output=usage.get("output_tokens"),
    )


class ClaudeParser:
    """Maps Claude Code's stream-json lines to Baton's events."""

    def __init__(self) -> None:
        self.cwd: str | None = None  # from the init event
        self.ended = False
        self.session_id: str | None = None
        self._text = TextStream()
        self._message_id: str | None = None  # the message being streamed
        self._streamed: set[str] = set()  # messages whose text arrived as deltas
        self._tools: dict[str, str] = {}  # tool_use id → tool name
        self._last_error = ""  # the text of a synthetic error message, for finish()
        self._spent: dict[str, Usage] = {}  # message id → its usage as the stream said it

    def feed(self, line: str) -> list[Event]:
        obj = json_object(line)
        if obj is None:
            return unparsed(line, "unparsed")
        match obj.get("type"):
            case "system":
                return self._system(obj)
            case "stream_event":
                return self._stream(obj.get("event") or {})
            case "assistant":
                return self._assistant(obj.get("message") or {})
            case "user":
                return self._user(obj.get("message") or {})
            case "result":
                return self._result(obj)
            case _:
                return []

    # -- system events ---------------------------------------------------------------------

    def _system(self, obj: dict[str, Any]) -> list[Event]:
        match obj.get("subtype"):
            case "init":
                self.cwd = str(obj.get("cwd") or "") or self.cwd
                sid = str(obj.get("session_id") or "")
                if not sid or sid == self.session_id:
                    return []
                self.session_id = sid
                return [Event(EventType.SESSION, {"id": sid, "model": obj.get("model")})]
            case "api_retry":
                status = obj.get("error_status")
                final = self._final_retry(obj, status)
                if final is not None:
                    return [final]
                message = (
                    f"API request failed ({obj.get('error') or 'error'}"
                    + (f", HTTP {status}" if status else "")
                    + f"); retry {obj.get('attempt')}/{obj.get('max_retries')}"
                    + f" in {int(obj.get('retry_delay_ms') or 0) / 1000:g} s"
                )
                return [Event(EventType.LOG, {"level": "warning", "message": message})]
            case _:
                return []

    def _final_retry(self, obj: dict[str, Any], status: object) -> Event | None:
        """An error event with ``stop`` when an ``api_retry`` names an incurable error."""
        error = str(obj.get("error") or "")
        kind = FINAL_RETRY_ERRORS.get(error)
        if kind is None and isinstance(status, int):
            kind = FINAL_RETRY_STATUS.get(status)
        if kind is None:
            return None
        self.ended = True  # the process is ended: its missing result says nothing more
        message = f"API request failed: {error or 'error'}"
        if isinstance(status, int):
            message += f" (HTTP {status})"
        message += "; Claude Code would only retry it, so Baton stopped it"
        if self._last_error:
            message += f": {self._last_error}"
        return events.error(kind, message, status=status, stop=True)

    # -- partial messages ------------------------------------------------------------------

    def _stream(self, event: dict[str, Any]) -> list[Event]:
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            self._message_id = str(message.get("id") or "")
            if self._text.pending:
                self._text.restart()
            return []
        if kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                if self._message_id:
                    self._streamed.add(self._message_id)
                new = self._text.delta(str(delta.get("text") or ""))
                return [events.text(new, delta=True)] if new else []
        if kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") != "text" and self._text.pending:
                self._text.commit()
        if kind == "message_stop":
            self._text.commit()
        return []

    # -- whole messages --------------------------------------------------------------------

    def _assistant(self, message: dict[str, Any]) -> list[Event]:
        content = message.get("content") or []
        if message.get("model") == "<synthetic>":
            # Claude Code's own error notice; the result event carries the same text.
            texts = [str(c.get("text") or "") for c in content if isinstance(c, dict)]
            self._last_error = "\n".join(t for t in texts if t) or self._last_error
            return []
        mid = str(message.get("id") or "")
        out: list[Event] = self._running_usage(mid, message.get("usage"))
        for block in content:
            if not isinstance(block, dict):
                continue
            match block.get("type"):
                case "text":
                    text = str(block.get("text") or "")
                    if mid and mid in self._streamed and mid == self._message_id:
                        continue  # already shown as deltas
                    new = self._text.block(text)
                    if new:
                        out.append(events.text(new, delta=True))
                case "tool_use":
                    out.extend(self._tool_use(block))
                case _:
                    pass
        return out

    def _tool_use(self, block: dict[str, Any]) -> list[Event]:
        tid = str(block.get("id") or "")
        if tid and tid in self._tools:
            return []  # the same call seen again (a retried stream)
        name = str(block.get("name") or "tool")
        self._tools[tid] = name
        args = block.get("input")
        args = args if isinstance(args, dict) else {}
        files: list[str] = []
        if name in FILE_TOOLS:
            path = args.get("file_path") or args.get("notebook_path")
            if path:
                files.append(relative(str(path), self.cwd))
        summary = self._summary(name, args, files)
        return [Event(EventType.TOOL, {"name": name, "input": summary, "files": files})]

    @staticmethod
    def _summary(name: str, args: dict[str, Any], files: list[str]) -> str:
        if files:
            return " ".join(files)
        for key in ("command", "pattern", "url", "query", "description", "prompt"):
            if isinstance(args.get(key), str):
                return clip(str(args[key]), INPUT_CHARS)
        return clip(json.dumps(args, ensure_ascii=False), INPUT_CHARS) if args else ""

    def _user(self, message: dict[str, Any]) -> list[Event]:
        content = message.get("content")
        if not isinstance(content, list):
            return []
        out: list[Event] = []
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            name = self._tools.get(str(block.get("tool_use_id") or ""), "tool")
            data = {
                "name": name,
                "ok": not bool(block.get("is_error")),
                "output": clip(_result_text(block.get("content")), OUTPUT_CHARS),
            }
            out.append(Event(EventType.TOOL_RESULT, data))
        return out

    def _running_usage(self, mid: str, raw: object) -> list[Event]:
        """The turn's usage so far, when a message says its own (its input is whole, its
        output only begun): so a token budget sees the turn's spend before it ends. Marked
        ``running``: the result's usage and cost, when they come, replace it."""
        if not mid or not isinstance(raw, dict):
            return []
        u = Usage.of(
            input=int(raw.get("input_tokens") or 0)
            + int(raw.get("cache_creation_input_tokens") or 0),
            cached_input=raw.get("cache_read_input_tokens"),
            output=raw.get("output_tokens"),
        )
        before = self._spent.get(mid)
        now = before.widen(u) if before is not None else u
        if now == before or now.empty:
            return []
        self._spent[mid] = now
        total = Usage()
        for one in self._spent.values():
            total = total + one
        return [Event(EventType.USAGE, {**total.to_json(), "running": True})]

    # -- the end marker --------------------------------------------------------------------

    def _result(self, obj: dict[str, Any]) -> list[Event]:
        self.ended = True
        self._text.commit()
        out: list[Event] = []
        sid = str(obj.get("session_id") or "")
        if sid and sid != self.session_id:
            self.session_id = sid
            out.append(Event(EventType.SESSION, {"id": sid}))
        cost = obj.get("total_cost_usd")
        used = _usage(obj)
        if not used.empty or cost:
            # total_cost_usd: Claude Code's own figure, so ``reported``.
            used = Usage.of(used.input, used.cached_input, used.output, None, cost)
            data = used.to_json()
            if self._spent:
                # What this process's own calls read: a resumed process whose report holds
                # the session's earlier ones too (newer Claude Code restores them) is told
                # apart by it (baton.core.usage.own_part).
                data["seen_input"] = sum(u.input + u.cached_input for u in self._spent.values())
            out.append(Event(EventType.USAGE, data))
        elif self._spent:  # the turn's report says nothing was used: that replaces the count
            out.append(Event(EventType.USAGE, Usage().to_json()))
        denials = obj.get("permission_denials") or []
        if denials:
            names = sorted({str(d.get("tool_name")) for d in denials if isinstance(d, dict)})
            message = f"Claude Code was refused {len(denials)} tool call(s): {', '.join(names)}"
            out.append(Event(EventType.LOG, {"level": "warning", "message": message}))
        text = obj.get("result")
        text = text if isinstance(text, str) else ""
        if obj.get("is_error"):
            out.append(self._error(obj, text))
        elif obj.get("stop_reason") is None:
            message = "the model's answer was cut off (the stream ended without a stop reason)"
            if text:
                message += f"; partial answer: {clip(text, 200)}"
            out.append(events.error("network", message))
        else:
            out.append(Event(EventType.FINAL, {"text": text}))
        return out

    def _error(self, obj: dict[str, Any], text: str) -> Event:
        subtype = str(obj.get("subtype") or "")
        errors = obj.get("errors")
        detail = text or "; ".join(str(e) for e in errors or []) or self._last_error
        if subtype == "error_max_turns" or obj.get("terminal_reason") == "max_turns":
            message = f"Claude Code reached its turn limit. {detail}".strip()
            return events.error("max_turns", message)
        status = obj.get("api_error_status")
        found = classify(detail, status=status if isinstance(status, int) else None)
        message = detail or f"Claude Code failed ({subtype or 'error'})"
        return events.error(
            str(found.kind),
            message,
            retry_after=found.retry_after,
            resets_at=found.resets_at,
            status=status,
        )

    def finish(self, exit_code: int | None, stderr_tail: str) -> list[Event]:
        if self.ended:
            return []
        self.ended = True
        how = f"exit code {exit_code}" if exit_code is not None else "an unknown exit status"
        detail = stderr_tail.strip() or self._last_error
        found = classify(detail)
        message = f"Claude Code stopped with {how} before its result"
        if detail:
            message += f": {clip(detail, 1000)}"
        return [
            events.error(
                str(found.kind),
                message,
                retry_after=found.retry_after,
                resets_at=found.resets_at,
                exit_code=exit_code,
            )
        ]


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [str(c.get("text") or "") for c in content if isinstance(c, dict)]
        return "\n".join(p for p in parts if p)
    return "" if content is None else str(content)


def _tools(value: object, default: tuple[str, ...]) -> list[str]:
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    if isinstance(value, str):
        return value.split()
    return list(default)


class ClaudeAdapter:
    """Provider ``claude``: Claude Code, headless.

    ``profile.options`` may set ``permission_mode`` (default ``acceptEdits``),
    ``allowed_tools`` and ``disallowed_tools`` (lists), ``max_turns``, ``max_retries``
    (Claude Code's own API retries, default :data:`MAX_RETRIES`) and ``extra_args``.
    """

    provider = "claude"

    def launch(self, turn: Turn, profile: Profile) -> Launch:
        opts = profile.options
        argv = [
            profile.binary or "claude",
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "--permission-mode",
            str(opts.get("permission_mode") or "acceptEdits"),
        ]
        allowed = _tools(opts.get("allowed_tools"), ALLOWED_TOOLS)
        if allowed:
            argv += ["--allowedTools", *allowed]
        disallowed = _tools(opts.get("disallowed_tools"), ())
        if disallowed:
            argv += ["--disallowedTools", *disallowed]
        model = turn.model or profile.model
        if model:
            argv += ["--model", model]
        argv += effort.claude_args(turn.effort)
        if opts.get("max_turns"):
            argv += ["--max-turns", str(int(opts["max_turns"]))]
        if turn.session_id:
            argv += ["--resume", turn.session_id]
        env = dict(profile.env)
        if profile.config_dir:
            env["CLAUDE_CONFIG_DIR"] = os.path.expanduser(profile.config_dir)
        env.update(QUIET_ENV)
        retries = opts.get("max_retries", env.get("CLAUDE_CODE_MAX_RETRIES", MAX_RETRIES))
        env["CLAUDE_CODE_MAX_RETRIES"] = str(int(retries))
        plan = WorkerMcp.of(profile)
        readable: tuple[str, ...] = ()
        notes: tuple[str, ...] = ()
        if plan is not None:
            folder = Path(turn.task_dir or tempfile.mkdtemp(prefix="baton-"))
            applied = for_claude(plan, {**os.environ, **env}, turn.cwd, folder)
            argv += applied.argv
            readable, notes = applied.readable, applied.notes
        argv += _tools(opts.get("extra_args"), ())
        return Launch(
            argv=argv, env=env, cwd=turn.cwd, stdin=turn.prompt, readable=readable, notes=notes
        )

    def parser(self) -> ClaudeParser:
        return ClaudeParser()
